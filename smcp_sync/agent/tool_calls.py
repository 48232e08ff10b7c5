"""Tool calls: blocking, submitted (a `Future`), cancelled; the Agent's own timeout.

Timeouts (docs/ARCHITECTURE.md, Wire decisions, spec error-handling.md): the Computer enforces `timeout` on the
tool and answers a timed-out call with an `isError` result (`meta.error_code` 4004),
which is returned like any result. The Server waits `timeout` + its buffer, the Agent
`timeout` + `AGENT_TIMEOUT_BUFFER`. When no answer comes (or the Server reports 408),
the Agent sends `server:tool_call_cancel` so the Computer stops the work, then raises
`SMCPTimeoutError`.

A result's blob-backed items are filled in before it is returned, unless the Agent or
the call opts out (`rehydrate`).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .transport import AgentTransport
from ..protocol import events
from ..protocol.codec import to_wire
from ..protocol.conventions import AGENT_TIMEOUT_BUFFER, DEFAULT_REQUEST_TIMEOUT
from ..protocol.errors import SMCPError, SMCPTimeoutError
from ..protocol.models import AgentCallData, CallToolResult, ToolCallReq
from .rehydrate import Rehydration
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id

logger = logging.getLogger(__name__)

#: Default `timeout` of a tool call, in seconds (enforced by the Computer).
DEFAULT_TOOL_TIMEOUT = DEFAULT_REQUEST_TIMEOUT
#: Default number of submitted tool calls in flight at once (the rest queue).
DEFAULT_MAX_CONCURRENT_CALLS = 32


class ToolCallFuture(Future[CallToolResult]):
    """A submitted tool call's `Future`; `req_id` is what `cancel_tool_call` takes."""

    def __init__(self, req_id: str) -> None:
        super().__init__()
        self.req_id = req_id


class ToolCalls:
    def __init__(
        self,
        connection: AgentTransport,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT_CALLS,
        rehydration: Rehydration | None = None,
    ):
        self._connection = connection
        self._rehydration = rehydration
        self._max_concurrent = max_concurrent
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._submitted: dict[str, ToolCallFuture] = {}

    def call(
        self,
        computer: str,
        tool_name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        req_id: str | None = None,
        rehydrate: bool | None = None,
    ) -> CallToolResult:
        request = ToolCallReq(
            agent=self._connection.name,
            req_id=req_id or new_req_id(),
            computer=computer,
            tool_name=tool_name,
            params=_tool_params(params),
            timeout=_wire_timeout(timeout),
        )
        try:
            result = ask(self._connection, events.TOOL_CALL, request, CallToolResult, timeout + AGENT_TIMEOUT_BUFFER)
        except SMCPTimeoutError as exc:
            try:
                self._send_cancel(request.req_id)
            except SMCPError as not_sent:
                logger.info("could not send cancel for %s: %s", request.req_id, not_sent)
            raise SMCPTimeoutError(
                f"tool call {tool_name!r} on computer {computer!r} timed out ({exc.message}); cancel sent",
                details={"computer": computer, "tool_name": tool_name, "req_id": request.req_id, "timeout": timeout},
            ) from None
        if self._rehydration is not None and self._rehydration.wanted(rehydrate):
            result = self._rehydration.result(computer, result, DEFAULT_AGENT_REQUEST_TIMEOUT)
        return result

    def submit(
        self,
        computer: str,
        tool_name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        rehydrate: bool | None = None,
    ) -> ToolCallFuture:
        """Start the call in the background; the `Future` has a `req_id` attribute."""
        _wire_timeout(timeout)  # refuse bad arguments here, not inside the Future
        _tool_params(params)
        future = ToolCallFuture(new_req_id())

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(
                    self.call(computer, tool_name, params, timeout, req_id=future.req_id, rehydrate=rehydrate)
                )
            except BaseException as exc:  # handed to whoever waits on the Future
                future.set_exception(exc)

        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._max_concurrent, thread_name_prefix=f"smcp-{self._connection.name}-call")
            self._submitted[future.req_id] = future
            self._executor.submit(run)
        future.add_done_callback(lambda done: self._forget(future.req_id))
        return future

    def cancel(self, req_id: str) -> None:
        """A submitted call that has not started is cancelled here; otherwise the
        Computer is asked to stop it and its call answers with a cancelled result."""
        with self._lock:
            future = self._submitted.get(req_id)
        if future is not None and future.cancel():
            return
        self._send_cancel(req_id)

    def close(self) -> None:
        """Cancel queued calls and wait for running ones (they fail fast once the
        connection is closed)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            never_started = list(self._submitted.values())
        for future in never_started:  # their `run` was dropped with the executor's queue
            future.cancel()

    def _forget(self, req_id: str) -> None:
        with self._lock:
            self._submitted.pop(req_id, None)

    def _send_cancel(self, req_id: str) -> None:
        self._connection.emit(events.CANCEL_TOOL_CALL, to_wire(AgentCallData(agent=self._connection.name, req_id=req_id)))


def _wire_timeout(timeout: Any) -> float | int:
    """A positive, finite number of seconds; whole numbers go out as ints (the spec types
    `timeout` as int and strict peers refuse 30.0)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return int(timeout) if float(timeout).is_integer() else float(timeout)


def _tool_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call's arguments as a dict; anything but a mapping with string keys is refused
    here, naming `params`, rather than failing deep in the request model."""
    if params is None:
        return {}
    if not isinstance(params, Mapping) or not all(isinstance(key, str) for key in params):
        raise TypeError(f"params must be a mapping of argument names to values (a dict), not {params!r}")
    return dict(params)
