"""`Requests`: what a worker may ask its relay (`wire`: open, release, call, emit,
status), checked field by field, and the call forwarded on its seat's `Connection`,
whose answer the thread that receives it writes back (`worker_socket`)."""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from ..protocol import events
from ..protocol.errors import InternalError, SMCPError
from ..protocol.extensions import EXTENSION_REQUESTS, ExtensionNotSupportedError
from .seat_table import SeatTable
from .seats import NotOpen, Seat, SeatKey
from .worker_socket import WorkerSocket, reply_of

logger = logging.getLogger(__name__)

#: What a worker may ask (wire.py).
OPS = ("open", "release", "call", "emit", "status")
#: What `_handle` returns for a call it forwarded: its answer is written when it comes.
_FORWARDED = object()


class Requests:
    def __init__(self, seats: SeatTable, status: Callable[[], dict[str, Any]], attached: Callable[[str], bool]) -> None:
        self._seats = seats
        self._status = status
        self._attached = attached  # has this session's socket said hello?

    def answer(self, session: str, worker: WorkerSocket, message: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to `message`, or None for a call forwarded (answered when it comes)."""
        try:
            value = self._handle(session, worker, message)
        except (NotOpen, SMCPError, KeyError, TypeError, ValueError) as exc:
            return reply_of(None, exc)
        except Exception:
            logger.exception("relay request %r failed", message.get("op"))
            return {"error": InternalError(f"internal error in the relay while handling {message.get('op')!r}").to_wire()}
        return None if value is _FORWARDED else reply_of(value, None)

    def _handle(self, session: str, worker: WorkerSocket, message: dict[str, Any]) -> Any:
        op = message.get("op")
        if op not in OPS:
            raise ValueError(f"unknown op {op!r:.50}; expected one of {', '.join(OPS)}")
        if op == "status":
            return self._status()
        key = SeatKey.of(message.get("seat"))
        agent_id = _text(message, "agent")
        if op == "open":
            return self._open(session, key, agent_id, message)
        if op == "release":
            self._seats.release(session, key, agent_id)
            return None
        seat = self._seats.joined(key)
        event = _text(message, "event")
        if op == "emit":
            seat.connection.emit(event, message.get("payload"))
            return None
        self._forward(seat, worker, event, message.get("payload"), _seconds(message.get("timeout")))
        return _FORWARDED

    def _open(self, session: str, key: SeatKey, agent_id: str, message: dict[str, Any]) -> Any:
        auth, headers = message.get("auth"), message.get("headers")
        if auth is not None and not isinstance(auth, dict) or headers is not None and not isinstance(headers, dict):
            raise ValueError("auth and headers must be JSON objects or null")
        wanted = frozenset(e for e in message.get("events") or () if e in events.NOTIFY_EVENTS)
        if not self._attached(session):
            raise ValueError("open before the worker's session socket said hello")
        return self._seats.open(session, key, agent_id, wanted, auth, headers, _seconds(message.get("timeout")))

    def _forward(self, seat: Seat, worker: WorkerSocket, event: str, payload: Any, timeout: float) -> None:
        connection = seat.connection
        if event in EXTENSION_REQUESTS and connection.connected and event not in connection.peer_extensions:
            raise ExtensionNotSupportedError.refusal(event, "server", f"the Server at {seat.key.url}")
        req_id = payload.get("req_id") if isinstance(payload, dict) and event == events.TOOL_CALL else None
        on_hangup = functools.partial(_cancel, seat, req_id) if isinstance(req_id, str) else None
        worker.forward(connection, event, payload, timeout, on_hangup)


def _cancel(seat: Seat, req_id: str) -> None:
    """The worker waiting for tool call `req_id` is gone: the Computer stops the call."""
    logger.info("worker gone during tool call %s: cancelling it", req_id)
    try:
        seat.connection.emit(events.CANCEL_TOOL_CALL, {"agent": seat.key.name, "req_id": req_id})
    except SMCPError as exc:
        logger.info("could not cancel %s: %s", req_id, exc)


def _text(message: dict[str, Any], field: str) -> str:
    value = message.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, not {value!r:.100}")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 86400:
        raise ValueError(f"timeout must be a positive number of seconds, not {value!r:.50}")
    return float(value)
