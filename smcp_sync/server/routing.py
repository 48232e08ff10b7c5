"""Routing of `client:*` requests from an Agent to the named Computer of its office.

The request is checked (payload model, caller is the joined Agent it claims to be, the
Computer is in the caller's office), forwarded unchanged, and the Computer's answer is
relayed unchanged. A Computer that does not answer in time yields 408, one that
disconnects first yields 404 at once.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..protocol import events
from ..protocol.errors import BadRequestError, NotFoundError, SMCPTimeoutError
from ..protocol.events import NAMESPACE
from ..protocol.models import (
    CompleteReq,
    GetComputerConfigReq,
    GetDeskTopReq,
    GetFinderReq,
    GetResourcesReq,
    GetToolsReq,
    ReadResourceReq,
    ToolCallReq,
)
from .answers import parse_payload
from .offices import Offices
from .pending import Outcome, PendingCalls

#: The payload model of every routed event.
ROUTED_REQUESTS: dict[str, type] = {
    events.TOOL_CALL: ToolCallReq,
    events.GET_CONFIG: GetComputerConfigReq,
    events.GET_TOOLS: GetToolsReq,
    events.GET_DESKTOP: GetDeskTopReq,
    events.GET_FINDER: GetFinderReq,
    events.READ_RESOURCE: ReadResourceReq,
    events.GET_RESOURCES: GetResourcesReq,
    events.COMPLETE: CompleteReq,
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

    def _route(self, event: str, model: type, sid: str, args: tuple[Any, ...]) -> Any:
        req = parse_payload(model, args)
        caller = self._offices.agent(sid, req.agent)
        target = self._offices.registry.find(caller.office_id, "computer", req.computer)
        if target is None:
            raise NotFoundError(
                f"no computer named {req.computer!r} in this office", details={"computer": req.computer}
            )
        timeout = self._timeout_for(req)
        with self._pending.waiting_on(target.sid) as waiter:
            if self._offices.registry.session(target.sid) is None:
                raise _gone(req.computer, event)
            self._offices.sio.emit(event, args[0], to=target.sid, namespace=NAMESPACE, callback=waiter.answer)
            outcome = waiter.wait(timeout)
        if outcome is Outcome.PEER_GONE:
            raise _gone(req.computer, event)
        if outcome is Outcome.TIMED_OUT:
            raise SMCPTimeoutError(
                f"computer {req.computer!r} did not answer {event} within {timeout:g} s",
                details={"computer": req.computer, "timeout": timeout},
            )
        return waiter.relayed_answer

    def _timeout_for(self, req: Any) -> float:
        if not isinstance(req, ToolCallReq):
            return self._request_timeout
        if not (math.isfinite(req.timeout) and 0 < req.timeout <= MAX_TOOL_CALL_TIMEOUT):
            raise BadRequestError(
                f"timeout must be > 0 and <= {MAX_TOOL_CALL_TIMEOUT:g} seconds @ $.timeout",
                details={"errors": ["out of range @ $.timeout"]},
            )
        return req.timeout + self._tool_call_buffer


def _gone(computer: str, event: str) -> NotFoundError:
    return NotFoundError(
        f"computer {computer!r} disconnected before answering {event}",
        details={"computer": computer},
    )
