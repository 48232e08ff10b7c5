"""Routing of `client:*` requests from an Agent to the named Computer of its office.

The request is checked (payload model, caller is the joined Agent it claims to be, the
Computer is in the caller's office), forwarded unchanged, and the Computer's answer is
relayed unchanged (except an error in the nested form of older Computers, which becomes
the flat payload current Agents read), sent from the thread its ack arrives on: no
handler thread waits for it (`pending`). A Computer that does not answer in time yields
408, one that disconnects first yields 404 at once.

Routing runs on the thread reading the Agent's socket, so it never waits there: a
Computer this process knows where to find (its own, or one of another process seen
before: `OfficeRegistry.recall`) is forwarded at once; any other is looked up in the
shared registry (a Redis round trip, which a hung Redis makes last up to its timeout) on
the event handlers' bounded pool (docs/server/scale-out.md).
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import Future
from typing import Any, Callable, Protocol

from ...protocol import events
from ...protocol.errors import BadRequestError, InternalError, NotFoundError, SMCPError, SMCPTimeoutError
from ...protocol.events import NAMESPACE
from ...protocol.extensions import EXTENSION_REQUESTS, ExtensionNotSupportedError
from ...protocol.models import (
    CompleteReq,
    GetBlobReq,
    GetComputerConfigReq,
    GetDeskTopReq,
    GetFinderReq,
    GetResourcesReq,
    GetSkillReq,
    GetSkillsReq,
    GetToolsReq,
    PutBlobReq,
    ReadResourceReq,
    ToolCallReq,
)
from ..offices.answers import parse_payload
from ..offices.office_rules import Session
from .offices import Offices
from .pending import Outcome, PendingCalls


class RoutedRequest(Protocol):
    """What every routed request names: the Agent sending it and the Computer it is for."""

    @property
    def agent(self) -> str: ...

    @property
    def computer(self) -> str: ...


#: The payload model of every routed event.
ROUTED_REQUESTS: dict[str, type[RoutedRequest]] = {
    events.TOOL_CALL: ToolCallReq,
    events.GET_CONFIG: GetComputerConfigReq,
    events.GET_TOOLS: GetToolsReq,
    events.GET_DESKTOP: GetDeskTopReq,
    events.GET_FINDER: GetFinderReq,
    events.READ_RESOURCE: ReadResourceReq,
    events.GET_RESOURCES: GetResourcesReq,
    events.COMPLETE: CompleteReq,
    events.GET_BLOB: GetBlobReq,
    events.PUT_BLOB: PutBlobReq,
    events.GET_SKILLS: GetSkillsReq,
    events.GET_SKILL: GetSkillReq,
}
assert set(ROUTED_REQUESTS) == events.CLIENT_EVENTS

#: Longest tool-call timeout accepted (one day): keeps the Server's wait finite and sane.
MAX_TOOL_CALL_TIMEOUT = 86400.0


class Router:
    def __init__(self, offices: Offices, pending: PendingCalls, request_timeout: float, tool_call_buffer: float) -> None:
        self._offices = offices
        self._pending = pending
        self._request_timeout = request_timeout
        self._tool_call_buffer = tool_call_buffer

    def handler_for(self, event: str) -> Callable[..., Any]:
        model = ROUTED_REQUESTS[event]

        def route(sid: str, *args: Any) -> Any:
            return self._route(event, model, sid, args)

        route.__name__ = f"route_{event.replace(':', '_')}"
        return route

    def _route(self, event: str, model: type[RoutedRequest], sid: str, args: tuple[Any, ...]) -> Future[Any]:
        """Check and forward the request; the answer comes when the Computer's ack does
        (the returned future's result: `answers` sends it then)."""
        req = parse_payload(model, args)
        caller = self._offices.agent(sid, req.agent)
        assert caller.office_id is not None  # a member: it is in an office
        timeout = self._timeout_for(req)
        known, target = self._offices.registry.recall(caller.office_id, "computer", req.computer)
        if known:
            return self._forward(event, req, args[0], timeout, target)
        answer: Future[Any] = Future()
        if not self._offices.sio.run_handler(self._look_up_and_forward, event, req, args[0], timeout, caller.office_id, answer):
            raise InternalError("the Server is busy (its handler pool is full); try again", details={"busy": True})
        return answer

    def _look_up_and_forward(
        self, event: str, req: RoutedRequest, payload: Any, timeout: float, office_id: str, answer: Future[Any]
    ) -> None:
        """On a pool thread: find the Computer in the shared registry, then forward;
        `answer` gets the outcome (a refusal or the Computer's answer)."""
        try:
            target = self._offices.registry.find(office_id, "computer", req.computer)
            forwarded = self._forward(event, req, payload, timeout, target)
        except Exception as exc:  # `answers` turns it into the coded answer
            answer.set_exception(exc)
            return
        forwarded.add_done_callback(functools.partial(_settle_with, answer))

    def _forward(self, event: str, req: RoutedRequest, payload: Any, timeout: float, target: Session | None) -> Future[Any]:
        if target is None:
            raise NotFoundError(
                f"no computer named {req.computer!r} in this office", details={"computer": req.computer}
            )
        if event in EXTENSION_REQUESTS and event not in target.handshake.extensions:  # it would never answer
            raise ExtensionNotSupportedError.refusal(event, "computer", f"computer {req.computer!r}")
        forwarded = self._pending.forward(target.sid, timeout, functools.partial(_relay, event, req.computer, timeout))
        if self._offices.registry.session(target.sid) is None:
            forwarded.peer_gone()
        else:
            self._offices.sio.emit(event, payload, to=target.sid, namespace=NAMESPACE, callback=forwarded.answer)
            forwarded.emitted()
        return forwarded.future

    def _timeout_for(self, req: RoutedRequest) -> float:
        if not isinstance(req, ToolCallReq):
            return self._request_timeout
        if not (math.isfinite(req.timeout) and 0 < req.timeout <= MAX_TOOL_CALL_TIMEOUT):
            raise BadRequestError(
                f"timeout must be > 0 and <= {MAX_TOOL_CALL_TIMEOUT:g} seconds @ $.timeout",
                details={"errors": ["out of range @ $.timeout"]},
            )
        return req.timeout + self._tool_call_buffer


def _settle_with(answer: Future[Any], done: Future[Any]) -> None:
    error = done.exception()
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(done.result())


def _relay(event: str, computer: str, timeout: float, outcome: Outcome, answer: tuple[Any, ...]) -> Any:
    """The Computer's answer as a handler returns it, so the ack to the Agent carries the
    same values (one as is, several as a tuple, none as None); or the error it ended in."""
    if outcome is Outcome.PEER_GONE:
        raise NotFoundError(f"computer {computer!r} disconnected before answering {event}", details={"computer": computer})
    if outcome is Outcome.TIMED_OUT:
        raise SMCPTimeoutError(
            f"computer {computer!r} did not answer {event} within {timeout:g} s",
            details={"computer": computer, "timeout": timeout},
        )
    if len(answer) == 1:
        return _flattened(answer[0])
    return answer or None


def _flattened(answer: Any) -> Any:
    """`answer`, with an error in the nested ``{"error": {...}}`` form of older Computers
    rewritten as the flat payload (a 0.4 Agent reads only a top-level `code`)."""
    error = SMCPError.from_wire(answer)
    return error.to_wire() if error is not None and "error" in answer else answer
