"""`Computer`: hosts MCP servers and offers their tools, locally or to an office.

Local use needs no Server at all::

    with Computer("laptop", config="mcp.json") as computer:
        computer.tools()
        computer.call_tool("echo", {"text": "hi"}, timeout=10)

`connect(url, office_id)` then makes the same Computer answer agents (`socket_side`).

Threads (all stopped by `close()`): the bridge loop (MCP I/O), the event thread
(tool-list refreshes, `server:update_*`, listeners), and the Socket.IO client's own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterable, Mapping

from ..connection import ReconnectPolicy
from ..protocol.codec import from_wire
from ..protocol.models import (
    CallToolResult,
    GetComputerConfigRet,
    MCPServerConfig,
    MCPServerInput,
    SMCPTool,
)
from .bridge import SHUTDOWN_GRACE, EventLoopThread
from .catalog import ToolCatalog, build_catalog
from .config_file import check_unique_names, load_config
from .event_pump import EventPump
from .history import DEFAULT_HISTORY_SIZE, ToolCallHistory, ToolCallRecord
from .inputs import AskInput, InputResolver
from .manager import ServerManager
from .redaction import public_input
from .policy import ServerPolicy
from .socket_side import SocketSide
from .status import ServerEvent, ServerStatus
from .tool_calls import DEFAULT_TOOL_TIMEOUT, ConfirmCallback, ToolCaller

log = logging.getLogger(__name__)

#: Seconds `start()` waits for the MCP servers' first connection attempts by default.
DEFAULT_START_TIMEOUT = 30.0

ServerListener = Callable[[ServerEvent], None]

_TOOL_EVENTS = frozenset({"connected", "disconnected", "tools_changed", "config_changed"})


class Computer:
    """An A2C-SMCP Computer. Thread-safe; every method blocks (bounded) and returns.

    `servers`: MCP server configs (models or dicts in the official SDK's format);
    `config`: a config file path or parsed document (see `config_file`), whose servers
    come first; `inputs` / `input_values` / `input_resolver`: how `${input:id}`
    placeholders get their values; `confirm`: asked before each call of a tool whose
    `auto_apply` is not true (None: no confirmation needed).
    """

    def __init__(
        self,
        name: str,
        servers: Iterable[MCPServerConfig | Mapping[str, Any]] = (),
        *,
        config: Any = None,
        inputs: Iterable[MCPServerInput | Mapping[str, Any]] = (),
        input_values: Mapping[str, Any] | None = None,
        input_resolver: AskInput | None = None,
        confirm: ConfirmCallback | None = None,
        policy: ServerPolicy = ServerPolicy(),
        history_size: int = DEFAULT_HISTORY_SIZE,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a Computer needs a non-empty name")
        self.name = name
        loaded = load_config(config) if config is not None else None
        definitions = [*(loaded.inputs if loaded else ()), *(_input(item) for item in inputs)]
        self._bridge = EventLoopThread(name)
        self._events = EventPump(name, self._on_server_events)
        self._manager = ServerManager(
            self._bridge, self._events.post, InputResolver(definitions, input_values, input_resolver), policy
        )
        configs = [*(loaded.servers if loaded else ()), *servers]
        check_unique_names(configs)
        for server_config in configs:
            self._manager.configure(server_config)
        self._history = ToolCallHistory(history_size)
        self._catalog = ToolCatalog()
        self._catalog_lock = threading.Lock()
        self._caller = ToolCaller(self._manager, lambda: self._catalog, confirm, self._history)
        self._listeners: list[ServerListener] = []
        self._socket = SocketSide(self, reconnect)
        self._lifecycle = threading.Lock()
        self._started = self._closed = False

    # -- lifecycle --------------------------------------------------------------------

    def start(self, timeout: float = DEFAULT_START_TIMEOUT) -> Computer:
        """Start the enabled MCP servers; returns once each has connected or failed its
        first attempt (failed ones keep retrying in the background), or after `timeout`."""
        with self._lifecycle:
            if self._closed:
                raise RuntimeError(f"Computer {self.name!r} is closed")
            if self._started:
                return self
            self._bridge.start()
            self._events.start()
            self._started = True
        self._manager.start_enabled(timeout)
        self._refresh_tools()
        return self

    def close(self, timeout: float = SHUTDOWN_GRACE) -> None:
        """Leave the office, stop every MCP server (stdio children terminated) and every
        thread. Idempotent."""
        with self._lifecycle:
            if self._closed:
                return
            self._closed = True
            started = self._started
        self._socket.close()
        if started:
            try:
                self._manager.stop_all()
            except TimeoutError:
                log.warning("Computer %r: MCP servers did not all stop in time", self.name)
            self._events.stop(timeout)
            self._bridge.stop(timeout)

    def __enter__(self) -> Computer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Computer {self.name!r} servers={[s.name for s in self.server_statuses()]}>"

    # -- office -----------------------------------------------------------------------

    def connect(self, url: str, office_id: str, auth: Mapping[str, Any] | None = None, timeout: float = 10.0) -> None:
        """Connect to a Server and join `office_id` (starting the Computer if needed).
        A refused connection or join raises the matching `SMCPError`; after a dropped
        connection the Computer reconnects and re-joins by itself."""
        self.start()
        self._socket.connect(url, office_id, auth, timeout)

    def disconnect(self) -> None:
        """Leave the office and close the Socket.IO connection (MCP servers keep running)."""
        self._socket.close()

    # -- tools ------------------------------------------------------------------------

    def tools(self) -> list[SMCPTool]:
        """The tools agents see, in configuration order."""
        return list(self._catalog.tools)

    def call_tool(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        req_id: str | None = None,
    ) -> CallToolResult:
        """Call a tool by its exposed name. Failures are results, not exceptions: see
        `CallToolResult.error_code` (DESIGN §3). `req_id` lets `cancel_tool_call` find it."""
        self._require_started()
        arguments = dict(params) if isinstance(params, Mapping) else {} if params is None else params
        return self._caller.call(name, arguments, timeout, req_id)

    def cancel_tool_call(self, req_id: str) -> bool:
        """Cancel the in-flight call `req_id` (its MCP request too); False if none was
        running (a call arriving later with that id is cancelled at once)."""
        return self._caller.cancel(req_id)

    def tool_call_history(self) -> tuple[ToolCallRecord, ...]:
        """Recent tool calls, oldest first."""
        return self._history.records()

    # -- MCP servers ---------------------------------------------------------------------

    @property
    def servers(self) -> ServerManager:
        """Per-server operations: statuses, and resource primitives for Desktop / Finder."""
        return self._manager

    def server_statuses(self) -> list[ServerStatus]:
        return [status for _, status in self._manager.snapshot()]

    def add_server(
        self, config: MCPServerConfig | Mapping[str, Any], timeout: float = DEFAULT_START_TIMEOUT
    ) -> ServerStatus:
        """Add an MCP server, or replace the one with the same name; started unless
        disabled (and unless the Computer is not started yet)."""
        model = self._manager.configure(config)
        if self._started and not model.disabled:
            self._manager.start(model.name, timeout)
        self._refresh_tools()
        return self._manager.status(model.name)

    def remove_server(self, name: str) -> None:
        self._manager.remove(name)
        self._refresh_tools()

    def start_server(self, name: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.start(name, timeout)
        self._refresh_tools()
        return status

    def stop_server(self, name: str) -> ServerStatus:
        self._manager.stop(name)
        self._refresh_tools()
        return self._manager.status(name)

    def restart_server(self, name: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.restart(name, timeout)
        self._refresh_tools()
        return status

    def get_config(self) -> GetComputerConfigRet:
        """Servers and inputs as agents may see them: secrets redacted (`redaction`),
        plus diagnostics (tool-name clashes, servers down)."""
        servers, notes = self._manager.public_configs()
        inputs = [public_input(item) for item in self._manager.inputs.definitions]
        diagnostics = [*notes, *self._catalog.diagnostics]
        return GetComputerConfigRet(servers=servers, inputs=inputs, diagnostics=diagnostics or None)

    def add_listener(self, listener: ServerListener) -> None:
        """Call `listener(event)` for every MCP server event (connected, disconnected,
        tools_changed, resources_list_changed, resource_updated, config_changed), on the
        Computer's event thread: it may block briefly and call back into the Computer."""
        self._listeners.append(listener)

    # -- internals ------------------------------------------------------------------------

    def _require_started(self) -> None:
        if not self._started or self._closed:
            raise RuntimeError(f"Computer {self.name!r} is {'closed' if self._closed else 'not started'}")

    def _on_server_events(self, events: list[ServerEvent]) -> None:
        kinds = {event.kind for event in events}
        if kinds & _TOOL_EVENTS:
            self._refresh_tools()
        if "config_changed" in kinds:
            self._socket.announce_config()
        for listener in list(self._listeners):
            for event in events:
                try:
                    listener(event)
                except Exception:
                    log.exception("server event listener %r failed on %s", listener, event)

    def _refresh_tools(self) -> None:
        """Rebuild the tool list; announce it to the office when it changed."""
        with self._catalog_lock:
            old = self._catalog
            self._catalog = new = build_catalog(self._manager.snapshot())
        for diagnostic in sorted(set(new.diagnostics) - set(old.diagnostics)):
            log.warning("Computer %r: %s", self.name, diagnostic)
        if new.tools != old.tools:
            self._socket.announce_tools()


def _input(item: MCPServerInput | Mapping[str, Any]) -> MCPServerInput:
    return from_wire(MCPServerInput, item) if isinstance(item, Mapping) else item
