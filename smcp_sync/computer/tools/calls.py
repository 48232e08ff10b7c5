"""Running one tool call: route, confirm, call with a deadline, and answer (docs/ARCHITECTURE.md, Wire decisions).

Every outcome is a `CallToolResult`: what the MCP tool returned (its own `isError`
relayed as is), or a failure the Computer detected, with `meta.error_code`:

* 4001 unknown tool, or a bare name (without ``{bundle_id}__``) that several exposed
  tools end in (`meta.candidates` lists them); 4002 forbidden by the configuration;
* 4003 execution failed: the MCP server errored, crashed, is restarting, or the call
  was cancelled (then also `meta.a2c_cancelled: true`);
* 4004 timeout (`meta.timeout` and `meta.a2c_timeout`: true);
* 4005 the confirm callback refused (or failed), or there is none (`NoOneConfirms`, whose
  message says how to allow the tool): a tool whose `auto_apply` is not true never runs
  unconfirmed (as in a2c-smcp 0.4.2); `allow_all` is the explicit way to run every tool;
* 4006 / 4007 the MCP server refused the call with HTTP 401 / 403 (`upstream_auth`), or
  refused its last connection so (an OAuth server not authorized yet: then a name with its
  ``{bundle_id}__`` prefix is enough), with `meta.mcp_server` and a non-secret `meta.auth_hint`.

A result the MCP server returned goes through its `vrl` script, if it has one (`vrl`).

The timeout covers confirmation and the MCP request; the MCP request is cancelled
(`notifications/cancelled`) on timeout and on cancel.

A call runs as a task on the Computer's event loop, where the MCP session lives: an
Agent's call is started by the thread reading the socket and answered from the loop
(`ToolCaller.start`, `connection.Connection.on_deferred`), with no thread waiting for it
(benchmarks/README.md, Findings).

What the MCP server announced before it answered is in force when the answer is
returned: notices and results share one stream, so a server that adds a tool and says
so (`tools/list_changed`) before its result has its new tool callable right after it,
and a document it changed shows in the next `get_finder`. When notices came during the
call, the answer waits (at most `SETTLE_WAIT`, within the call's timeout) until they
are handled (`settle`).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from typing import Any, Callable, Coroutine

import anyio
import anyio.to_thread
import attrs

from ...protocol.errors import ErrorCode, NotFoundError, cut_short
from ...protocol.models import A2C_TOOL_META, CallToolResult, ToolMeta
from ...protocol.models._fields import as_dict, evolve
from ..mcp.adapter import McpFailure
from ..mcp.failures import tool_call_failure, unauthorized
from ..mcp.bridge import EventLoopThread
from ..mcp.manager import WAIT_GRACE, ServerManager
from ..mcp.server_connection import ServerUnavailable
from .catalog import ToolCatalog, ToolRoute
from .history import ToolCallHistory, ToolCallRecord
from .inflight import InFlightCalls

log = logging.getLogger(__name__)

#: The most seconds an answer waits for the notices its server sent before it.
SETTLE_WAIT = 5.0

#: Confirm callbacks running at once (each on a worker thread, maybe waiting for a person);
#: more wait for one to end, within their calls' timeouts. Their own limit, so that
#: callbacks left unanswered never hold up another call's short steps on worker threads.
CONFIRMATIONS_AT_ONCE = 256

#: ``settle(server, timeout) -> bool``: wait until what `server` announced so far is in force.
Settle = Callable[[str, float], bool]


@attrs.frozen
class PendingToolCall:
    """What a `confirm` callback is asked to approve."""

    req_id: str
    #: The exposed name (``{bundle_id}__{alias or tool}``).
    name: str
    #: The MCP server's bundle_id.
    server: str
    #: The MCP server's own name for the tool.
    tool: str
    params: dict[str, Any]


ConfirmCallback = Callable[[PendingToolCall], bool]


def allow_all(pending: PendingToolCall) -> bool:
    """The confirm callback that approves every call: `Computer(confirm=allow_all)`
    runs tools without `auto_apply` unasked (without a callback they are refused)."""
    return True


@attrs.frozen
class NoOneConfirms:
    """The confirm callback of a Computer no one watches (what `confirm=None` means): a
    tool without `auto_apply` is refused (4005), and the Agent is told `how` to allow it,
    in the terms of whoever runs the Computer (`smcp-sync computer` names its flag)."""

    how: str = "set auto_apply for the tool or give the Computer a confirm callback"

    def __call__(self, pending: PendingToolCall) -> bool:
        return False

    def refusal(self, name: str) -> CallToolResult:
        return CallToolResult.failure(
            ErrorCode.TOOL_REQUIRES_CONFIRMATION,
            f"tool {name!r} refused (4005): no one confirms tool calls on this Computer; {self.how}",
        )


class ToolCaller:
    """Runs tool calls as tasks on the Computer's event loop: a call in flight holds no
    thread (`start` answers through a callback); the steps that may block (the confirm
    callback, waiting for notices, the `vrl` script) run on worker threads."""

    def __init__(
        self,
        bridge: EventLoopThread,
        manager: ServerManager,
        catalog: Callable[[], ToolCatalog],
        confirm: ConfirmCallback | None,
        history: ToolCallHistory,
        settle: Settle,
    ) -> None:
        self._bridge = bridge
        self._manager = manager
        self._catalog = catalog
        self._confirm = NoOneConfirms() if confirm is None else confirm
        self._history = history
        self._settle = settle
        self._in_flight = InFlightCalls()
        self._confirmations = anyio.CapacityLimiter(CONFIRMATIONS_AT_ONCE)

    def call(self, name: str, params: dict[str, Any], timeout: float, req_id: str | None = None) -> CallToolResult:
        """Run the call and wait for its result (not from the Computer's loop thread)."""
        run = self._prepare(name, params, timeout, req_id)
        if isinstance(run, CallToolResult):
            return run
        try:
            # the loop ends the call by its timeout; the grace only guards against a stuck loop
            return self._bridge.run(run.coroutine, min(timeout + WAIT_GRACE, threading.TIMEOUT_MAX))
        except TimeoutError:
            return _timed_out(run.route.exposed, timeout)

    def start(
        self,
        name: str,
        params: dict[str, Any],
        timeout: float,
        req_id: str | None,
        done: Callable[[CallToolResult], None],
    ) -> None:
        """Start the call; `done(result)` is called once it ends: at once on this thread
        when it cannot start (an unknown tool...), else on the Computer's loop thread."""
        run = self._prepare(name, params, timeout, req_id)
        if isinstance(run, CallToolResult):
            done(run)
            return
        try:
            self._bridge.submit(_delivered(run, done))
        except BaseException:
            run.coroutine.close()
            raise

    def cancel(self, req_id: str) -> bool:
        """Cancel the call(s) of `req_id` (or the one that arrives later with it)."""
        return self._in_flight.cancel(req_id)

    def _prepare(self, name: str, params: dict[str, Any], timeout: float, req_id: str | None) -> _Run | CallToolResult:
        """The call's task, not started yet; or its result when it has no route. `params`
        and `timeout` were checked where they entered the Computer (`Computer.call_tool`,
        the socket side)."""
        catalog = self._catalog()
        exposed = catalog.resolve(name)
        route = catalog.routes.get(exposed) if isinstance(exposed, str) else None
        if route is None:
            return _unroutable(catalog, name, exposed)
        return _Run(route, self._run(route, params, timeout, req_id or uuid.uuid4().hex))

    async def _run(self, route: ToolRoute, params: dict[str, Any], timeout: float, req_id: str) -> CallToolResult:
        started, began = time.time(), time.monotonic()
        deadline = began + timeout
        try:
            result = await self._confirmed_call(route, params, timeout, deadline, req_id)
        except anyio.get_cancelled_exc_class():  # the Computer is closing: still an answer
            result = _cancelled(route.exposed)
        self._history.append(
            ToolCallRecord(
                req_id=req_id,
                server=route.server,
                tool=route.exposed,
                timestamp=started,
                ok=not result.is_error,
                error_code=result.error_code,
                duration=time.monotonic() - began,
            )
        )
        return result

    async def _confirmed_call(
        self, route: ToolRoute, params: dict[str, Any], timeout: float, deadline: float, req_id: str
    ) -> CallToolResult:
        if not (route.auto_apply or self._confirm is allow_all):  # allow_all: nobody to ask
            if isinstance(self._confirm, NoOneConfirms):  # nobody to ask either
                return self._confirm.refusal(route.exposed)
            pending = PendingToolCall(req_id, route.exposed, route.server, route.tool, params)
            # the callback may ask a person: the call times out meanwhile, abandoning it
            with anyio.move_on_after(deadline - time.monotonic()) as asking:
                refusal = await anyio.to_thread.run_sync(
                    self._ask_confirmation, pending, abandon_on_cancel=True, limiter=self._confirmations
                )
            if asking.cancelled_caught:
                return _timed_out(route.exposed, timeout)
            if refusal is not None:
                return refusal
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _timed_out(route.exposed, timeout)
        try:
            connection = self._manager.connection(route.server)
        except NotFoundError:  # removed since the catalog was read
            return CallToolResult.failure(ErrorCode.TOOL_NOT_FOUND, f"unknown tool {route.exposed!r}")
        notices = connection.notices
        scope = anyio.CancelScope()
        stop = functools.partial(self._bridge.call_soon, scope.cancel)
        self._in_flight.register(req_id, stop)
        answered: CallToolResult | None = None
        try:
            with scope:
                answered = await connection.call_tool(route.tool, params, remaining)
        except TimeoutError:
            return _timed_out(route.exposed, timeout)
        except (ServerUnavailable, McpFailure) as exc:
            return tool_call_failure(route.server, route.exposed, exc)
        finally:
            self._in_flight.unregister(req_id, stop)
        if answered is None:
            return _cancelled(route.exposed)
        result = _with_tool_meta(answered, route.meta)
        if connection.notices != notices:
            await anyio.to_thread.run_sync(self._await_notices, route.server, deadline)
        script = self._manager.vrl_script(route.server)
        if script is None:
            return result
        # CPU work: kept off the loop
        return await anyio.to_thread.run_sync(script.transform, result, route.tool, params)

    def _await_notices(self, server: str, deadline: float) -> None:
        wait = min(SETTLE_WAIT, max(0.0, deadline - time.monotonic()))
        if not self._settle(server, wait):
            log.info("MCP server %r: its change notices were not all handled %.1fs after a tool's answer", server, wait)

    def _ask_confirmation(self, pending: PendingToolCall) -> CallToolResult | None:
        try:
            approved = self._confirm(pending)
        except Exception as exc:
            log.warning("confirm callback failed for %s: %r", pending.name, exc)
            return CallToolResult.failure(
                ErrorCode.TOOL_REQUIRES_CONFIRMATION, f"tool {pending.name!r} needs confirmation, which failed: {exc}"
            )
        if approved is True:
            return None
        return CallToolResult.failure(
            ErrorCode.TOOL_REQUIRES_CONFIRMATION, f"tool {pending.name!r} needs confirmation and it was refused"
        )


@attrs.frozen
class _Run:
    """A routed call's task (a coroutine not started yet)."""

    route: ToolRoute
    coroutine: Coroutine[Any, Any, CallToolResult]


async def _delivered(run: _Run, done: Callable[[CallToolResult], None]) -> None:
    """Run the call and hand its result to `done`. Nobody waits on this task, so nothing
    it raises may pass silently: a bug in the call is logged and answered as a failed
    call (the Agent would wait out its timeout), one in `done` is logged."""
    try:
        result = await run.coroutine
    except Exception:
        log.exception("tool call %r failed on this Computer", run.route.exposed)
        result = CallToolResult.failure(
            ErrorCode.TOOL_EXECUTION_FAILED, f"tool call {run.route.exposed!r} failed on this Computer"
        )
    try:
        done(result)
    except Exception:
        log.exception("the answer to tool call %r could not be sent", run.route.exposed)


def _with_tool_meta(result: CallToolResult, meta: ToolMeta | None) -> CallToolResult:
    """The tool's configured `ToolMeta` carried in the result's meta under `a2c_tool_meta`
    (an object, merged over what the MCP server put there), as a2c-smcp 0.1.6 and 0.4.2
    Computers send it: an Agent sees a result's `ret_object_mapper` without the tool list."""
    if meta is None:
        return result
    carried = (result.meta or {}).get(A2C_TOOL_META)
    merged = {**(carried if isinstance(carried, dict) else {}), **as_dict(meta)}
    return evolve(result, meta={**(result.meta or {}), A2C_TOOL_META: merged})


def _unroutable(catalog: ToolCatalog, name: str, exposed: str | tuple[str, ...]) -> CallToolResult:
    """The failure for a `name` with no route (`exposed`: what `catalog.resolve` made of it)."""
    server = catalog.unavailable.get(exposed) if isinstance(exposed, str) else catalog.unauthorized_server(name)
    if server is not None and server in catalog.unauthorized:
        return unauthorized(server, cut_short(name), "its last connection was refused", catalog.unauthorized[server])
    if isinstance(exposed, tuple):
        if exposed:
            listed = ", ".join(repr(candidate) for candidate in exposed)
            message = f"tool name {cut_short(repr(name))} is ambiguous: call it by its exposed name, one of {listed}"
            return CallToolResult.failure(ErrorCode.TOOL_NOT_FOUND, message, candidates=list(exposed))
        return CallToolResult.failure(ErrorCode.TOOL_NOT_FOUND, f"unknown tool {cut_short(repr(name))}")
    if exposed in catalog.forbidden:
        return CallToolResult.failure(
            ErrorCode.TOOL_DISABLED,
            f"tool {exposed!r} is forbidden by the configuration of MCP server {catalog.forbidden[exposed]!r}",
        )
    return CallToolResult.failure(
        ErrorCode.TOOL_EXECUTION_FAILED,
        f"tool {exposed!r} is unavailable: its MCP server {catalog.unavailable[exposed]!r} is restarting",
    )


def _timed_out(name: str, timeout: float) -> CallToolResult:
    return CallToolResult.failure(
        ErrorCode.TOOL_TIMEOUT, f"tool {name!r} timed out after {timeout:g}s", timeout=True, a2c_timeout=True
    )


def _cancelled(name: str) -> CallToolResult:
    return CallToolResult.failure(
        ErrorCode.TOOL_EXECUTION_FAILED, f"tool call {name!r} was cancelled", a2c_cancelled=True
    )
