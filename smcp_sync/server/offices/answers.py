"""How every Server handler answers: payload validation in, coded answers out.

A handler body raises `SMCPError` for a refusal; the guards here turn it into the answer
the event's caller expects (the flat error payload, or the two-value join/leave ack),
turn any other exception into a 500 without a stack trace on the wire, and keep the
handler thread alive whatever happens. A body that answers later (a routed request
waiting for its Computer) returns a `Future`, and gets the same treatment when it is done.
"""

from __future__ import annotations

import functools
import logging
from concurrent.futures import Future
from typing import Any, Callable, TypeVar

from ...protocol import events
from ...protocol.codec import from_wire
from ...protocol.conventions import join_refusal
from ...protocol.errors import BadRequestError, ErrorCode, InternalError, SMCPError
from .office_rules import check_identifier_length

logger = logging.getLogger(__name__)

T = TypeVar("T")
Handler = Callable[..., Any]

#: Refusals worth a warning (spec/security.md: permission and isolation violations).
_SECURITY_CODES = frozenset(
    {
        ErrorCode.UNAUTHORIZED,
        ErrorCode.FORBIDDEN,
        ErrorCode.ROOM_FULL,
        ErrorCode.ROOM_NOT_FOUND,
        ErrorCode.NOT_IN_ROOM,
        ErrorCode.CROSS_ROOM_ACCESS,
    }
)


#: Fields naming a session, an office or a request; bounded like names (`office_rules`).
IDENTIFIER_FIELDS = ("agent", "computer", "name", "office_id", "req_id")


def parse_payload(model: type[T], args: tuple[Any, ...]) -> T:
    """The event's single payload argument as `model`; 400 naming the field otherwise."""
    if len(args) != 1:
        raise BadRequestError(
            f"expected exactly one payload object, got {len(args)} arguments",
            details={"arguments": len(args)},
        )
    request = from_wire(model, args[0])
    for field in IDENTIFIER_FIELDS:
        value = getattr(request, field, None)
        if isinstance(value, str):
            check_identifier_length(field, value)
    return request


#: Events answered with the two-value join/leave ack; every other event with the flat error.
JOIN_ACK_EVENTS = frozenset({events.JOIN_OFFICE, events.LEAVE_OFFICE})


def answer_for(event: str) -> Callable[[Handler], Handler]:
    """The answering guard of `event`'s handler."""
    return (answer_with_join_ack if event in JOIN_ACK_EVENTS else answer_with_error_object)(event)


def refusal_for(event: str | None, error: SMCPError) -> Any:
    """`error` in the shape `event` answers with, for a packet refused before any handler
    runs (binary, undecodable): a join/leave caller reads only the two-value ack."""
    return join_refusal(error) if event in JOIN_ACK_EVENTS else error.to_wire()


def answer_with_error_object(event: str) -> Callable[[Handler], Handler]:
    """For request/response events: the body's result on success, the flat error payload on refusal."""
    return functools.partial(_guard, event, on_success=lambda result: result, on_error=lambda err: err.to_wire())


def answer_with_join_ack(event: str) -> Callable[[Handler], Handler]:
    """For join/leave: `(True, None)` on success, `(False, "[code] message")` on refusal."""
    return functools.partial(_guard, event, on_success=lambda _: (True, None), on_error=join_refusal)


def _guard(event: str, body: Handler, *, on_success: Callable[[Any], Any], on_error: Callable[[SMCPError], Any]) -> Handler:
    @functools.wraps(body)
    def handler(sid: str, *args: Any) -> Any:
        return _answer(event, sid, lambda: body(sid, *args), on_success, on_error)

    return handler


def _answer(
    event: str, sid: str, outcome: Callable[[], Any], on_success: Callable[[Any], Any], on_error: Callable[[SMCPError], Any]
) -> Any:
    """The answer to `outcome()`. A body that answers later returns a `Future`: then the
    answer is a `Future` too, resolved the same way when it is done (`engine` sends it)."""
    try:
        result = outcome()
    except SMCPError as err:
        level = logging.WARNING if err.code in _SECURITY_CODES else logging.INFO
        logger.log(level, "refused %s from %s: %s", event, sid, err)
        return on_error(err)
    except Exception:
        logger.exception("%s from %s failed", event, sid)
        return on_error(InternalError(f"internal server error while handling {event}"))
    if isinstance(result, Future):
        answer: Future[Any] = Future()
        result.add_done_callback(lambda done: answer.set_result(_answer(event, sid, done.result, on_success, on_error)))
        return answer
    return on_success(result)
