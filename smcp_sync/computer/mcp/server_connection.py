"""One MCP server, supervised: a long-lived task on the bridge loop (docs/ARCHITECTURE.md, Threads).

The task enters and exits the transport and the session itself (anyio cancel scopes
demand the same task), serves the live session (tool-list refreshes, liveness checks),
and when the connection dies or cannot be made, waits out a backoff and tries again, for
as long as the server is not stopped. A crash therefore costs this server's tools for a
while, never the Computer. Other tasks use the live session for calls and requests.

Everything here runs on the loop; sync code reaches it through the bridge. State for
sync readers is the immutable `status` snapshot, replaced wholesale.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

import anyio
import attrs
import httpx2

from ...protocol.models import CallToolResult, MCPServerConfig, StdioServerConfig
from .adapter import (
    McpConnectionLost,
    McpRequestFailed,
    McpSession,
    NotificationKind,
    describe_failure,
    open_session,
)
from .client_features import ClientAnswers
from .policy import ServerPolicy
from .status import ServerEvent, ServerEventKind, ServerState, ServerStatus
from .stderr_pipe import StderrTail
from .upstream_auth import connection_authorization_code

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Starts a long-lived task on the loop: `spawn(function, name)` (the bridge's).
Spawn = Callable[[Callable[[], Coroutine[Any, Any, Any]], str], None]
#: The auth of each new connection (`oauth.session_auth`; None: the server has no `oauth` block).
SessionAuth = Callable[[], httpx2.Auth | None]


class ServerUnavailable(Exception):
    """The MCP server has no live session right now (starting, restarting, stopped).

    The message may reach an Agent, so it leaves out why (an OS error, a crash): that is
    in `status` and in `Computer.diagnostics()` (computer-management/protocol.md §7)."""

    def __init__(self, status: ServerStatus) -> None:
        waiting = status.state is ServerState.NEEDS_AUTHORIZATION
        super().__init__(f"MCP server {status.bundle_id!r} {'needs authorization' if waiting else f'is {status.state.value}'}")
        self.status = status


class ServerConnection:
    def __init__(
        self,
        config: MCPServerConfig,
        policy: ServerPolicy,
        publish: Callable[[ServerEvent], None],
        spawn: Spawn,
        session_auth: SessionAuth | None,
        client: ClientAnswers,
    ) -> None:
        assert config.bundle_id is not None, "the manager resolves the bundle_id before connecting"
        self.config = config
        #: The server's identity (events, statuses and requests name it by this).
        self.bundle_id: str = config.bundle_id
        self._policy = policy
        self._publish = publish
        self._spawn = spawn
        self._session_auth = session_auth
        self._client = client
        state = ServerState.DISABLED if config.disabled else ServerState.STOPPED
        self.status = ServerStatus(name=config.name, bundle_id=self.bundle_id, state=state)
        self._stderr = StderrTail(self.bundle_id)
        # anyio events need the loop: made by start() / _serve(), on it
        self._scope: anyio.CancelScope | None = None  # set while supervised
        self._first_attempt: anyio.Event | None = None
        self._finished: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._session: McpSession | None = None
        self._tools_dirty = False
        self._refreshing_tools = False
        self._tools_refreshed: anyio.Event | None = None  # made by a waiter, set after a refresh
        self._suspect = False
        self._in_flight = 0
        #: The loop time by which each request in flight must end (`latest_deadline`).
        self._deadlines: list[float] = []
        #: Change notices received (tools, resources), read from other threads: a tool
        #: call whose answer came after a notice waits for it to be in force (`tools.calls`).
        self.notices = 0

    @property
    def active(self) -> bool:
        """Supervised right now (started and not stopped)."""
        return self._scope is not None

    # -- lifecycle (on the loop) --------------------------------------------------------

    async def start(self) -> ServerStatus:
        """Start supervising (if not already) and wait for the first attempt's outcome."""
        if self._scope is None:
            self._scope = anyio.CancelScope()
            self._first_attempt, self._finished = anyio.Event(), anyio.Event()
            self._set_status(state=ServerState.STARTING, error=None)
            self._spawn(self._supervise, f"smcp-mcp[{self.bundle_id}]")
        assert self._first_attempt is not None
        await self._first_attempt.wait()
        return self.status

    async def stop(self) -> None:
        """Close the session (terminating a stdio child) and stop supervising."""
        if self._scope is None:
            return
        finished = self._finished
        assert finished is not None
        self._scope.cancel()  # anyio-level: the SDK's shielded stdio shutdown still runs
        with anyio.move_on_after(self._policy.stop_timeout):
            await finished.wait()
        if not finished.is_set():
            log.warning("MCP server %r did not stop within %.1fs", self.bundle_id, self._policy.stop_timeout)

    # -- use of the live session (on the loop, from other tasks) --------------------------

    async def tools_settled(self) -> None:
        """Return once every `tools/list_changed` notice received so far has had its
        `tools/list` answered (and a changed list published), or the session ended."""
        while self._session is not None and (self._tools_dirty or self._refreshing_tools):
            if self._tools_refreshed is None:
                self._tools_refreshed = anyio.Event()
            await self._tools_refreshed.wait()

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """Raises ServerUnavailable, McpConnectionLost, McpRequestFailed or TimeoutError."""
        return await self.request(lambda session: session.call_tool(name, arguments), timeout)

    async def request(self, operation: Callable[[McpSession], Awaitable[T]], timeout: float) -> T:
        session = self._session
        if session is None:
            raise ServerUnavailable(self.status)
        self._in_flight += 1
        deadline = anyio.current_time() + timeout
        self._deadlines.append(deadline)
        try:
            with anyio.fail_after(timeout):
                return await operation(session)
        except McpConnectionLost:
            self._raise_suspicion()
            raise
        finally:
            self._in_flight -= 1
            self._deadlines.remove(deadline)

    def latest_deadline(self) -> float | None:
        """The loop time by which every request in flight must end (None: none is): what
        the server asks of the host meanwhile is answered by then (`client_features`)."""
        return max(self._deadlines, default=None)

    # -- supervision ------------------------------------------------------------------------

    async def _supervise(self) -> None:
        """Connect, serve, and after each failure back off and retry, until stopped."""
        assert self._scope is not None and self._first_attempt is not None and self._finished is not None
        first_attempt, finished = self._first_attempt, self._finished
        try:
            with self._scope:
                attempt = 0
                while True:
                    began = anyio.current_time()
                    error = await self._run_session()
                    if anyio.current_time() - began >= self._policy.stable_after:
                        attempt = 0
                    if self.status.authorization_code is not None:
                        delay = self._policy.backoff_max  # nothing changes until someone authorizes it
                        self._wait_for_authorization(error)
                    else:
                        delay = self._policy.backoff(attempt)
                        attempt += 1
                        self._went_down(error, delay)
                    first_attempt.set()
                    await anyio.sleep(delay)
        except Exception:  # a bug here must not stop the bridge's other work
            log.exception("supervision of MCP server %r failed", self.bundle_id)
        finally:
            was_running = self.status.state is ServerState.RUNNING
            self._session, self._scope = None, None
            self._set_status(state=ServerState.STOPPED, error=None)
            if was_running:
                self._emit("disconnected")
            first_attempt.set()
            finished.set()

    def _went_down(self, error: str, delay: float) -> None:
        was_running = self.status.state is ServerState.RUNNING
        self._set_status(state=ServerState.RESTARTING, error=error)
        tail = self._stderr.text()
        log.warning(
            "MCP server %r %s: %s; retrying in %.1fs%s",
            self.bundle_id,
            "went down" if was_running else f"failed to start{self._command_shown()}",
            error,
            delay,
            f"\nits last stderr lines:\n{tail}" if tail else "",
        )
        if was_running:
            self._emit("disconnected")

    def _wait_for_authorization(self, error: str) -> None:
        """Its connection was refused for want of authorization: said once (a
        ``needs_authorization`` event: the Computer's diagnostics warn), then tried again
        quietly."""
        was = self.status.state
        self._set_status(state=ServerState.NEEDS_AUTHORIZATION, error=error)
        if was is ServerState.NEEDS_AUTHORIZATION:
            log.debug("MCP server %r still refuses the connection: %s", self.bundle_id, error)
            return
        if was is ServerState.RUNNING:
            self._emit("disconnected")
        self._emit("needs_authorization")

    def _command_shown(self) -> str:
        """`` (command 'x')`` for a stdio server: the local log names what was run (the
        `error` itself names no host path, it is also shown to Agents)."""
        command = getattr(self.config.server_parameters, "command", None)
        return f" (command {command!r})" if command else ""

    async def _run_session(self) -> str:
        """Connect, serve until the connection dies, and say why it ended."""
        self._stderr.lines.clear()  # "its last stderr lines" are this attempt's only
        try:
            async with open_session(
                self.config,
                on_notification=self._on_notification,
                stderr_tail=self._stderr,
                init_timeout=self._policy.init_timeout,
                auth=self._session_auth() if self._session_auth is not None else None,
                client=self._client.handlers(self.bundle_id, self.latest_deadline),
            ) as session:
                with anyio.fail_after(self._policy.init_timeout):
                    tools = await session.list_tools() if session.capabilities.tools else ()
                self._session = session
                self._tools_dirty = self._suspect = False
                self._set_status(
                    state=ServerState.RUNNING,
                    tools=tools,
                    capabilities=session.capabilities,
                    server_info=session.server_info,
                    error=None,
                    generation=self.status.generation + 1,
                    authorization_code=None,
                )
                log.info(
                    "MCP server %r is %s (%s, %d tools)",
                    self.bundle_id,
                    "back up" if self.status.generation > 1 else "up",
                    session.server_info,
                    len(tools),
                )
                self._emit("connected")
                if self._first_attempt is not None:
                    self._first_attempt.set()
                try:
                    return await self._serve(session)
                finally:
                    self._session = None
                    self._wake_tools_waiters()
        except Exception as exc:
            self._set_status(authorization_code=connection_authorization_code(exc))
            return describe_failure(exc)

    async def _serve(self, session: McpSession) -> str:
        while True:
            self._wake = anyio.Event()  # set by _wake_up(); all on the loop, so no lost wake-ups
            if session.closed:
                return "the connection was closed" + (
                    " (the process exited)" if isinstance(self.config, StdioServerConfig) else ""
                )
            if self._tools_dirty:
                self._tools_dirty, self._refreshing_tools = False, True
                try:
                    await self._refresh_tools(session)
                finally:
                    self._refreshing_tools = False
                    self._wake_tools_waiters()
                continue
            if self._suspect:
                self._suspect = False
                await self._check_alive(session)
                continue
            interval = self._policy.health_interval or float("inf")
            with anyio.move_on_after(interval) as idle:
                await self._wake.wait()
            if idle.cancelled_caught and self._in_flight == 0:
                await self._check_alive(session)

    async def _refresh_tools(self, session: McpSession) -> None:
        try:
            with anyio.fail_after(self._policy.request_timeout):
                tools = await session.list_tools()
        except (McpRequestFailed, TimeoutError) as exc:
            log.warning("MCP server %r: tools/list failed after a change notice: %s", self.bundle_id, describe_failure(exc))
            self._suspect = True
            return
        if tools != self.status.tools:
            self._set_status(tools=tools)
            self._emit("tools_changed")

    async def _check_alive(self, session: McpSession) -> None:
        try:
            with anyio.fail_after(self._policy.ping_timeout):
                await session.ping()
        except McpRequestFailed:
            return  # it answered, even if with an error: alive
        except (McpConnectionLost, TimeoutError):
            raise McpConnectionLost(f"no answer to a ping within {self._policy.ping_timeout:g}s") from None

    # -- notifications (called on the loop by the adapter; never block) ------------------

    def _on_notification(self, kind: NotificationKind, uri: str | None) -> None:
        if kind in ("tools_changed", "resources_list_changed", "resource_updated"):
            self.notices += 1
        if kind == "tools_changed":
            self._tools_dirty = True
            self._wake_up()
        elif kind == "closed":
            self._wake_up()
        elif kind == "transport_fault":
            self._raise_suspicion()
        else:
            self._emit(kind, uri)

    def _wake_tools_waiters(self) -> None:
        if self._tools_refreshed is not None:
            self._tools_refreshed.set()
            self._tools_refreshed = None

    def _raise_suspicion(self) -> None:
        self._suspect = True
        self._wake_up()

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _set_status(self, **changes: Any) -> None:
        self.status = attrs.evolve(self.status, **changes)

    def _emit(self, kind: ServerEventKind, uri: str | None = None) -> None:
        self._publish(ServerEvent(server=self.bundle_id, kind=kind, uri=uri, status=self.status))
