"""Tool calls: blocking, submitted (a `Future`), cancelled; the Agent's own timeout.

Timeouts (docs/ARCHITECTURE.md, Wire decisions, spec error-handling.md): the Computer enforces `timeout` on the
tool and answers a timed-out call with an `isError` result (`meta.error_code` 4004),
which is returned like any result. The Server waits `timeout` + its buffer, the Agent
`timeout` + `AGENT_TIMEOUT_BUFFER`. When no answer comes (or the Server reports 408),
the Agent sends `server:tool_call_cancel` so the Computer stops the work, then raises
`SMCPTimeoutError`.

Interrupts: whatever else ends the wait also cancels the call before it propagates — a
KeyboardInterrupt (Ctrl-C, a Jupyter kernel interrupt), a SystemExit (gunicorn's worker
timeout), any other exception raised in the waiting thread (Celery's soft time limit),
or the Agent's `close()` from another thread (it cancels every call still waiting, then
disconnects). Sending the cancel waits at most `CANCEL_SEND_TIMEOUT` for the connection.
Every error of ours carries the call's `details["req_id"]` (and `details["cancel_sent"]`
where a cancel was due); a message says "cancel sent" only when it was. Exceptions not
ours get a note instead (PEP 678 `__notes__`: `add_note`, where Python has it), since
their classes are not ours to add fields to and a note is what a traceback shows.

A result's blob-backed items are filled in before it is returned, unless the Agent or
the call opts out (`rehydrate`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..connection.session import DEFAULT_EMIT_TIMEOUT, NotConnectedError
from .transport import AgentTransport
from ..protocol import events
from ..protocol.codec import to_wire
from ..protocol.conventions import AGENT_TIMEOUT_BUFFER, DEFAULT_TOOL_TIMEOUT
from ..protocol.errors import SMCPError, SMCPTimeoutError
from ..protocol.models import AgentCallData, CallToolResult, ToolCallReq
from ..threads.forks import after_fork_in_child
from .rehydrate import Rehydration
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id

logger = logging.getLogger(__name__)

#: Default number of submitted tool calls in flight at once (the rest queue).
DEFAULT_MAX_CONCURRENT_CALLS = 32
#: Seconds the cancel of an interrupted call (or of every call, on close) may wait for
#: another message being written: an interrupt must not hang.
CANCEL_SEND_TIMEOUT = 2.0


class ToolCallFuture(Future[CallToolResult]):
    """A submitted tool call's `Future`; `req_id` is what `cancel_tool_call` takes."""

    def __init__(self, req_id: str) -> None:
        super().__init__()
        self.req_id = req_id


class _InFlight:
    """A call waiting for its answer, whether its cancel went out, and whether `close()`
    ended its wait (`closing`)."""

    __slots__ = ("req_id", "cancel_sent", "closing")

    def __init__(self, req_id: str) -> None:
        self.req_id = req_id
        self.cancel_sent = False
        self.closing = False


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
        self._in_flight: dict[str, _InFlight] = {}
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): the calls and the executor's threads are
        the parent's; the next `submit` starts an executor of the child's own."""
        self._lock = threading.Lock()
        self._executor, self._submitted, self._in_flight = None, {}, {}

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
        flight = _InFlight(request.req_id)
        with self._lock:
            self._in_flight[flight.req_id] = flight
        try:
            result = ask(self._connection, events.TOOL_CALL, request, CallToolResult, timeout + AGENT_TIMEOUT_BUFFER)
            if flight.closing:  # the Computer's answer to close()'s cancel came before the disconnect
                raise NotConnectedError(f"the Agent closed while tool call {tool_name!r} on computer {computer!r} waited")
        except SMCPTimeoutError as exc:
            sent = self._cancel(flight, time.monotonic() + CANCEL_SEND_TIMEOUT)
            raise SMCPTimeoutError(
                f"tool call {tool_name!r} on computer {computer!r} timed out ({exc.message}); {_cancel_said(sent)}",
                details={
                    "computer": computer, "tool_name": tool_name, "req_id": flight.req_id,
                    "timeout": timeout, "cancel_sent": sent,
                },
            ) from None  # fmt: skip
        except SMCPError as exc:  # an answer, or a wait ended by close() (which cancelled) or a drop
            _mark(exc, flight)
            raise
        except BaseException as exc:  # an interrupt of the waiting thread
            sent = self._cancel(flight, time.monotonic() + CANCEL_SEND_TIMEOUT)
            what = f"tool call {tool_name!r} on computer {computer!r} (req_id {flight.req_id})"
            _add_note(exc, f"smcp_sync: {what} was interrupted; {_cancel_said(sent)}")
            raise
        finally:
            with self._lock:
                self._in_flight.pop(flight.req_id, None)
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

    def cancel_in_flight(self) -> None:
        """Send the cancel of every call waiting for its answer (the Agent is closing:
        their waits end as the connection does), within `CANCEL_SEND_TIMEOUT` in all."""
        deadline = time.monotonic() + CANCEL_SEND_TIMEOUT
        with self._lock:
            flights = list(self._in_flight.values())
        for flight in flights:
            flight.closing = True  # its wait ends as the connection does, whatever answer comes first
            self._cancel(flight, deadline)

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

    def _send_cancel(self, req_id: str, timeout: float = DEFAULT_EMIT_TIMEOUT) -> None:
        payload = to_wire(AgentCallData(agent=self._connection.name, req_id=req_id))
        self._connection.emit(events.CANCEL_TOOL_CALL, payload, timeout)

    def _cancel(self, flight: _InFlight, deadline: float) -> bool:
        """Send `flight`'s cancel unless it went out already (waiting for the connection
        until `deadline` at most); whether it was sent."""
        if not flight.cancel_sent:
            try:
                self._send_cancel(flight.req_id, max(0.0, deadline - time.monotonic()))
            except SMCPError as not_sent:
                logger.info("could not send the cancel of tool call %s: %s", flight.req_id, not_sent)
                return False
            flight.cancel_sent = True
        return True


def _cancel_said(sent: bool) -> str:
    return "cancel sent" if sent else "cancel not sent (no connection)"


def _mark(error: SMCPError, flight: _InFlight) -> None:
    """Name the call in `error` (in place: its class and traceback stay), and say so when
    its cancel went out (the wait ended by `close()`)."""
    error.details.setdefault("req_id", flight.req_id)
    if flight.cancel_sent:
        error.details["cancel_sent"] = True
        error.message = f"{error.message}; tool call {flight.req_id}: cancel sent"
        error.args = (error.message,)


def _add_note(error: BaseException, note: str) -> None:
    """PEP 678's note: `add_note` on Python 3.11+, the same `__notes__` list before."""
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(note)
    else:
        setattr(error, "__notes__", [*getattr(error, "__notes__", ()), note])


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
