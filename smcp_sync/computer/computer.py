"""`Computer`: hosts MCP servers and offers their tools, locally or to an office.

Local use needs no Server at all::

    with Computer("laptop", config="mcp.json") as computer:
        computer.tools()
        computer.call_tool("echo", {"text": "hi"}, timeout=10)
        computer.desktop()
        computer.finder(keywords=["report"])

`connect(url, office_id)` then makes the same Computer answer agents (`socket_side`).

Threads (all stopped by `close()`; docs/ARCHITECTURE.md, Threads): the bridge loop (MCP
I/O), the event thread (tool-list refreshes, resource change detection, listeners), a
relisting lane per MCP server with resources (`channels.relisting`), the debounce
thread (`server:update_desktop` / `_finder` / `_skills`), the warm-up threads
(`channels.warmer`: subscriptions ahead of reads of windows, document summaries and
skill packages), and the Socket.IO connection's reader and handler pool.

Fork (`threads.forks`): a Computer started before `os.fork()` is its parent's in the
child: its loop, MCP server children, threads, skill folder and socket are the parent's.
There every use raises `ComputerNotRunningError` naming the fix (start a Computer in the
child), and `close()` returns at once having touched nothing: no MCP child stopped, no
folder removed, no byte written.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from .._aliases import Aliases, refuse_unknown
from ..blobs import BlobHandles
from ..blobs.uploads import Uploads
from ..connection.credentials import AuthSource
from ..connection.session import ReconnectPolicy
from ..protocol import events
from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT, DEFAULT_TOOL_TIMEOUT, SERVER_TIMEOUT_BUFFER
from ..protocol.models import (
    DEFAULT_FINDER_LIMIT,
    A2CResource,
    A2CSkillRef,
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    Desktop,
    GetComputerConfigRet,
    MCPServerConfig,
    ResourceContents,
    SMCPTool,
)
from ..threads.forks import after_fork_in_child, parent_pid
from ..threads.gevent_order import require_same_threading, stdlib_patched
from ..threads.serial import Batches, SerialThread
from .channels.desktop import DesktopWindows
from .channels.finder_catalogue import FinderCatalogue, FinderPage
from .channels.reads import ResourceRequests
from .channels.skill_files import SkillResource
from .channels.skill_watch import SkillFolderWatch
from .channels.skills import (
    SkillHome,
    SkillRegistry,
    UserSkills,
)
from .channels.watch import ResourceWatch
from .config.files import check_unique_bundle_ids, load_config
from .config.inputs import InputResolver
from .config.oauth_store import OAuthTokenStore
from .config.redaction import public_input
from .mcp.bridge import SHUTDOWN_GRACE, EventLoopThread
from .mcp.client_features import ClientAnswers, ClientFeatures, Root, Roots
from .mcp.manager import ServerManager
from .mcp.oauth import OpenUrl
from .mcp.policy import ServerPolicy
from .options import BlobOptions, ChannelOptions, Inputs, SkillsOptions
from .mcp.status import ComputerNotRunningError, ServerEvent, ServersNotStartedError, ServerState, ServerStatus
from .socket_side import SocketSide
from .tools.calls import ConfirmCallback, ToolCaller
from .tools.catalog import ToolCatalog, build_catalog
from .tools.history import ToolCallHistory, ToolCallRecord

log = logging.getLogger(__name__)

#: Seconds `start()` waits for the MCP servers' first connection attempts by default.
DEFAULT_START_TIMEOUT = 30.0
#: Seconds `authorize()` waits for the user by default.
DEFAULT_AUTHORIZE_TIMEOUT = 300.0

ServerListener = Callable[[ServerEvent], None]
#: Called with the `server:update_*` event name each time the Computer announces a change.
UpdateListener = Callable[[str], None]

#: The keywords Computer took before its value objects, kept one release (issue 35).
_INPUTS_ALIASES = Aliases(
    "Computer",
    "inputs",
    Inputs,
    {"inputs": "definitions", "input_values": "values", "input_resolver": "resolver", "input_memory": "memory"},
)
_CHANNELS_ALIASES = Aliases(
    "Computer", "channels", ChannelOptions, {"update_debounce": "update_debounce", "history_size": "history_size"}
)
_SKILLS_ALIASES = Aliases(
    "Computer",
    "skills",
    SkillsOptions,
    {"user_skills": "user_folder", "skill_home": "home", "skill_max_size": "max_size", "skill_inline_budget": "inline_budget"},
)
_BLOBS_ALIASES = Aliases(
    "Computer",
    "blobs",
    BlobOptions,
    {
        "blob_handle_ttl": "handle_ttl",
        "landing_folder": "landing_folder",
        "upload_max_bytes": "upload_max_bytes",
        "upload_idle_timeout": "upload_idle_timeout",
    },
)

_TOOL_EVENTS = frozenset({"connected", "disconnected", "tools_changed", "config_changed", "needs_authorization"})


class Computer:
    """An A2C-SMCP Computer. Thread-safe; every method blocks (bounded) and returns.

    `servers`: MCP server configs (models or dicts in the official SDK's format);
    `config`: a config file path or parsed document (see `config.files`), whose servers
    and inputs come first; `confirm`: asked before each call of a tool whose `auto_apply`
    is not true (None: such calls are refused with 4005, as `NoOneConfirms` does, whose
    message says how to allow them; `allow_all` approves every call). Each other concern
    is one value object, checked when built (`options`): `inputs`, how `${input:id}`
    placeholders get their values (`Inputs`; they may also change at runtime:
    `set_input`); `channels`, how Desktop / Finder / Skills changes are announced and
    ordered (`ChannelOptions`); `skills`, the user's SKILL folder and how skill files are
    served (`SkillsOptions`); `blobs`, blob handles and where `client:put_blob` uploads
    land (`BlobOptions`); `policy`, the timing of MCP server supervision
    (`ServerPolicy`); `reconnect`, the connection to a Server (`ReconnectPolicy`).
    `oauth_store`: where OAuth tokens are kept. The keywords these replaced
    (`input_values`, `user_skills`, `blob_handle_ttl`, `update_debounce`...) are
    deprecated aliases, kept one release.
    `client_features`: how the host answers what MCP servers ask of their client
    (elicitation, sampling, roots: `ClientFeatures`, one value so that the callbacks
    travel together; None: such requests are refused, and not announced); the roots
    may also come from the config document's ``roots``.
    """

    def __init__(
        self,
        name: str,
        servers: Iterable[MCPServerConfig | Mapping[str, Any]] = (),
        *,
        config: Any = None,
        inputs: Inputs | None = None,
        confirm: ConfirmCallback | None = None,
        policy: ServerPolicy = ServerPolicy(),
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        channels: ChannelOptions | None = None,
        skills: SkillsOptions | None = None,
        blobs: BlobOptions | None = None,
        oauth_store: OAuthTokenStore | None = None,
        client_features: ClientFeatures | None = None,
        **deprecated: Any,
    ) -> None:
        if inputs is not None and not isinstance(inputs, Inputs):  # the definitions, as before Inputs
            deprecated["inputs"], inputs = inputs, None
        inputs = _INPUTS_ALIASES.take(deprecated, inputs) or Inputs()
        channels = _CHANNELS_ALIASES.take(deprecated, channels) or ChannelOptions()
        skills = _SKILLS_ALIASES.take(deprecated, skills) or SkillsOptions()
        blobs = _BLOBS_ALIASES.take(deprecated, blobs) or BlobOptions()
        refuse_unknown("Computer", deprecated)
        if not isinstance(name, str) or not name:
            raise ValueError("a Computer needs a non-empty name")
        self.name = name
        loaded = load_config(config) if config is not None else None
        definitions = [*(loaded.inputs if loaded else ()), *inputs.definitions]
        self._bridge = EventLoopThread(name)
        self._events = SerialThread(f"smcp-computer-events[{name}]")
        server_events: Batches[ServerEvent] = Batches(self._events, self._on_server_events)
        self._manager = ServerManager(
            self._bridge,
            server_events.post,
            InputResolver(definitions, inputs.values, inputs.resolver, memory=inputs.memory),
            policy,
            oauth_store,
            ClientAnswers(_with_configured_roots(client_features, loaded.roots if loaded else None)),
        )
        configs = [*(loaded.servers if loaded else ()), *servers]
        check_unique_bundle_ids(configs)
        for server_config in configs:
            self._manager.configure(server_config)
        self._history = ToolCallHistory(channels.history_size)
        #: The blob handles minted for agents (`smcp_sync.blobs`), read by `client:get_blob`.
        self.blobs = BlobHandles(blobs.handle_ttl)
        #: Uploads in progress (`client:put_blob`).
        self.uploads = Uploads(blobs.landing_folder, blobs.upload_max_bytes, blobs.upload_idle_timeout)
        self._catalog = ToolCatalog()
        self._catalog_lock = threading.Lock()
        self._caller = ToolCaller(
            self._bridge, self._manager, lambda: self._catalog, confirm, self._history, self._settle
        )
        # requests for agents must end before the Server stops waiting for the answer
        request_timeout = min(policy.request_timeout, DEFAULT_REQUEST_TIMEOUT - SERVER_TIMEOUT_BUFFER)
        cold_wait = min(policy.cold_wait, request_timeout)
        self._desktop = DesktopWindows(self._manager, request_timeout, cold_wait)
        self._finder = FinderCatalogue(self._manager, request_timeout, cold_wait)
        self._skill_home = SkillHome(skills.home)
        self._user_skills = UserSkills(skills.user_folder) if skills.user_folder is not None else None
        self._skills = SkillRegistry(
            self._manager, self._skill_home, request_timeout, cold_wait, self._user_skills, skills.max_size
        )
        self._user_skills_watch = (
            SkillFolderWatch(name, self._user_skills.folder, self._announce, channels.update_debounce)
            if self._user_skills is not None
            else None
        )
        #: Text files of skills up to this many bytes are answered inline, others as blobs.
        self.skill_inline_budget = skills.inline_budget
        read_whole = (self._desktop.channel, self._finder.channel)
        watched = (*read_whole, self._skills.channel)
        self._watch = ResourceWatch(
            name, self._manager, watched, self._announce, request_timeout, channels.update_debounce
        )
        self._resources = ResourceRequests(self._manager, self._watch, read_whole, request_timeout)
        self._listeners: list[ServerListener] = []
        self._update_listeners: list[UpdateListener] = []
        self._socket = SocketSide(self, reconnect)
        self._lifecycle = threading.Lock()
        self._started = self._closed = False
        self._inherited = False  # started by the process this one forked from (module doc)
        self._made_patched = stdlib_patched()
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        self._lifecycle = threading.Lock()
        self._inherited = self._inherited or (self._started and not self._closed)

    # -- lifecycle --------------------------------------------------------------------

    def start(self, timeout: float = DEFAULT_START_TIMEOUT, *, require_all: bool = False) -> Computer:
        """Start the enabled MCP servers; returns once each has connected or failed its
        first attempt (failed ones keep retrying in the background), or after `timeout`.
        With `require_all`, raises `ServersNotStartedError` when one is not running then
        (the Computer stays started: close() it)."""
        with self._lifecycle:
            if self._inherited:
                raise self._inherited_error()
            if self._closed:
                raise RuntimeError(f"Computer {self.name!r} is closed")
            if self._started:
                return self
            require_same_threading(self._made_patched, f"the Computer {self.name!r}")
            self._bridge.start()
            self._events.start()
            self._watch.start()
            if self._user_skills_watch is not None:
                self._user_skills_watch.start()
            self._started = True
        self.uploads.collect_stale()  # parts of uploads a crash cut short
        self._manager.start_enabled(timeout)
        self._refresh_tools()
        self._watch.current_servers()  # listed before start() returns; read in the background
        down = [s for s in self.server_statuses() if s.state not in (ServerState.RUNNING, ServerState.DISABLED)]
        if require_all and down:
            raise ServersNotStartedError(down)
        return self

    def close(self, timeout: float = SHUTDOWN_GRACE) -> None:
        """Leave the office, stop every MCP server (stdio children terminated) and every
        thread. Idempotent."""
        with self._lifecycle:
            if self._closed:
                return
            self._closed = True
            if self._inherited:
                return  # all of it is the parent's (module doc)
            started = self._started
        if started:
            self._watch.halt_warm_up()  # its requests would fail, noisily, once the servers stop
        # The MCP servers stop as soon as the Server has seen this Computer leave (and failed
        # the calls in flight): the handlers of those calls, waiting on an MCP request, then
        # end at once instead of holding the close up until their requests time out.
        self._socket.close(on_disconnected=self._stop_servers if started else None)
        self.uploads.close(timeout)
        if started:
            self._events.stop(timeout, finish_queued=True)
            self._watch.stop(timeout)
            if self._user_skills_watch is not None:
                self._user_skills_watch.stop(timeout)
            self._bridge.stop(timeout)
        self._skill_home.close()

    def _stop_servers(self) -> None:
        try:
            self._manager.stop_all()
        except TimeoutError:
            log.warning("Computer %r: MCP servers did not all stop in time", self.name)

    def __enter__(self) -> Computer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Computer {self.name!r} servers={[s.bundle_id for s in self.server_statuses()]}>"

    # -- office -----------------------------------------------------------------------

    def connect(
        self,
        url: str,
        office_id: str,
        auth: AuthSource = None,
        timeout: float = 10.0,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Connect to a Server and join `office_id` (starting the Computer if needed).
        `auth` is the Socket.IO auth dict or a callable returning it, asked again at every
        reconnect; `headers` extra HTTP headers (as for `Agent`).
        A refused connection or join raises the matching `SMCPError` (4008: the Server
        speaks another protocol version); after a dropped connection the Computer
        reconnects and re-joins by itself."""
        self.start()
        self._socket.connect(url, office_id, auth, headers, timeout)
        self._watch.discard_pending()

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
        """Call a tool by its exposed name (``{bundle_id}__{tool}``; the bare tool name
        also works while only one server has it). Failures are results, not exceptions:
        see `CallToolResult.error_code` (docs/ARCHITECTURE.md, Wire decisions). `req_id` lets `cancel_tool_call` find it."""
        self._require_started()
        return self._caller.call(name, _call_arguments(params, timeout), timeout, req_id)

    def start_tool_call(
        self,
        name: str,
        params: Mapping[str, Any] | None,
        timeout: float,
        req_id: str | None,
        done: Callable[[CallToolResult], None],
    ) -> None:
        """`call_tool` without waiting: `done(result)` is called when the call ends (on the
        Computer's event loop thread: it must not block), or at once when it cannot start.
        The office's door (`OfficeRequests`): the socket side checked the request as it
        came off the wire, so nothing is checked again here."""
        self._require_started()
        self._caller.start(name, dict(params or {}), timeout, req_id, done)

    def cancel_tool_call(self, req_id: str) -> bool:
        """Cancel the in-flight call `req_id` (its MCP request too); False if none was
        running (a call arriving later with that id is cancelled at once)."""
        return self._caller.cancel(req_id)

    def tool_call_history(self) -> tuple[ToolCallRecord, ...]:
        """Recent tool calls, oldest first."""
        return self._history.records()

    # -- Desktop, Finder and resources -------------------------------------------------

    def desktop(self, desktop_size: int | None = None, window: str | None = None) -> list[Desktop]:
        """The Desktop (spec/desktop.md): rendered windows, at most `desktop_size` (None:
        all). `window` fetches that one window (its exact listed URI) and nothing else."""
        self._require_started()
        servers = self._watch.current_servers()
        return self._desktop.windows(servers, self._history.records(), desktop_size, window)

    def finder(
        self,
        keywords: list[str] | None = None,
        file_type: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
    ) -> FinderPage:
        """One page of the document catalogue (spec/finder.md) and its `total_count`; not
        `complete` while documents being read in the background were left out (waits at
        most `ServerPolicy.cold_wait` for them)."""
        self._require_started()
        servers = self._watch.current_servers()
        return self._finder.page(servers, self._history.records(), keywords, file_type, offset, limit)

    def skills(self) -> list[A2CSkillRef]:
        """The skills an Agent may use now (spec-0.3/skill.md): the MCP servers' (running
        ones only) in configuration order, then the user's."""
        self._require_started()
        return [skill.ref for skill in self._skills.current(self._watch.current_servers())]

    def skill_resource(self, name: str, rel_path: str | None = None) -> SkillResource:
        """File `rel_path` (default SKILL.md, its front matter stripped) of skill `name`:
        4016 for a malformed name, 4014 for an unknown one, 4017 for a path outside the
        package, a forbidden or missing file, or one over `skill_max_size`."""
        self._require_started()
        return self._skills.resource(name, rel_path, self._watch.current_servers)

    def read_resource(self, uri: str, mcp_server: str | None = None) -> list[ResourceContents]:
        """Read `uri` on the MCP server that lists its host (`dpe://`, `window://`), or on
        `mcp_server`. Invalid `dpe://` URIs are 4204; unknown documents, pages and elements
        4201 / 4202 / 4203."""
        self._require_started()
        return self._resources.read(uri, mcp_server)

    def get_resources(self, mcp_server: str, cursor: str | None = None) -> tuple[list[A2CResource], str | None]:
        """One page of `resources/list` of the MCP server whose bundle_id is `mcp_server`,
        and the next page's cursor (None: last)."""
        self._require_started()
        return self._resources.page(mcp_server, cursor)

    def complete(
        self,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None = None,
        mcp_server: str | None = None,
    ) -> Completion:
        """MCP `completion/complete`, on the server owning the resource template's host (a
        prompt reference needs `mcp_server`)."""
        self._require_started()
        return self._resources.complete(ref, argument, context, mcp_server)

    def add_update_listener(self, listener: UpdateListener) -> None:
        """Call `listener(event)` each time the Computer announces a change to the office
        (`server:update_tool_list`, `_config`, `_desktop`, `_finder`, `_skills`), connected or not."""
        self._update_listeners.append(listener)

    # -- MCP servers ---------------------------------------------------------------------

    @property
    def servers(self) -> ServerManager:
        """Per-server operations: statuses, and resource primitives for Desktop / Finder."""
        return self._manager

    def add_tool_call_listener(self, listener: Callable[[ToolCallRecord], Any]) -> None:
        """Call `listener(record)` as each tool call routed to an MCP server ends
        (`ComputerMetrics`), on the Computer's event loop thread: it must not block."""
        self._history.watch(listener)

    def server_statuses(self) -> list[ServerStatus]:
        return [status for _, status in self._manager.snapshot()]

    def add_server(
        self, config: MCPServerConfig | Mapping[str, Any], timeout: float = DEFAULT_START_TIMEOUT
    ) -> ServerStatus:
        """Add an MCP server, or replace the one with the same bundle_id; started unless
        disabled (and unless the Computer is not started yet)."""
        model = self._manager.configure(config)
        assert model.bundle_id is not None  # resolved by configure
        if self._started and not model.disabled:
            self._manager.start(model.bundle_id, timeout)
        self._refresh_tools()
        return self._manager.status(model.bundle_id)

    def remove_server(self, bundle_id: str) -> None:
        self._manager.remove(bundle_id)
        self._refresh_tools()

    def start_server(self, bundle_id: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.start(bundle_id, timeout)
        self._refresh_tools()
        return status

    def stop_server(self, bundle_id: str) -> ServerStatus:
        self._manager.stop(bundle_id)
        self._refresh_tools()
        return self._manager.status(bundle_id)

    def restart_server(self, bundle_id: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.restart(bundle_id, timeout)
        self._refresh_tools()
        return status

    def authorize(
        self,
        bundle_id: str,
        open_url: OpenUrl | None = None,
        *,
        timeout: float = DEFAULT_AUTHORIZE_TIMEOUT,
        redirect_uri: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> ServerStatus:
        """Authorize this Computer at an MCP server with an ``oauth`` block
        (docs/computer/oauth.md): blocks until the user has granted it (the tokens are then
        stored and the server reconnected, if started) or `timeout` seconds pass.

        `open_url(url)` shows the authorization URL to the user (default: the web browser).
        The redirect comes back to a listener on 127.0.0.1 (an ephemeral port); or give the
        `redirect_uri` the host receives itself, and return the URL the user was sent to
        from `open_url`. `scopes`: OAuth scopes to ask for besides those of the server's
        config and challenge (a server answering 4007 names the scope it wants in the
        hint); the user is then asked again even if a token is stored. Raises
        `OAuthAuthorizationError` (4007) when it is refused, the flow fails (its message
        says why) or `cancel_authorization` stops it, TimeoutError after `timeout`."""
        wanted = _scope_text(scopes) if scopes is not None else None
        status = self._manager.authorize(bundle_id, open_url or _open_in_browser, timeout, redirect_uri, wanted)
        self._refresh_tools()
        return status

    def forget_authorization(self, bundle_id: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        """Drop the OAuth token stored for MCP server `bundle_id` (its client registration
        is kept) and reconnect it if it is started: it then needs `authorize` again."""
        status = self._manager.forget_authorization(bundle_id, timeout)
        self._refresh_tools()
        return status

    def cancel_authorization(self, bundle_id: str) -> bool:
        """Stop the `authorize` call waiting for the user on MCP server `bundle_id` (from
        another thread): it raises `OAuthAuthorizationError` (4007) and its listener
        closes. False when no authorization of that server is running."""
        return self._manager.cancel_authorization(bundle_id)

    def set_roots(self, roots: Roots, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Answer the MCP servers' ``roots/list`` with `roots` (`Root`s or ``file://``
        URIs, or a callable returning them) from now on, and tell each running server
        they changed (waits up to `timeout` for each). Also the way to say a callable's
        answer changed: pass it again. Only for a Computer given `ClientFeatures(roots=...)`
        (else ValueError: its servers were not told it has roots)."""
        self._manager.set_roots(roots, timeout)

    def set_input(self, input_id: str, value: Any, timeout: float = DEFAULT_START_TIMEOUT) -> list[str]:
        """Give input `input_id` a new value now: each MCP server whose config uses it is
        configured again with it (restarted if it was running; waits up to `timeout` for
        each), and the office hears `server:update_config`. Returns those servers'
        bundle_ids. An unknown id or a value a pickString does not offer raises 400."""
        self._manager.inputs.set(input_id, value)
        restarted = self._manager.reconfigure_using(input_id, timeout)
        if restarted:
            self._refresh_tools()
        return restarted

    def get_config(self) -> GetComputerConfigRet:
        """Servers and inputs as agents may see them: secrets redacted (`redaction`), and
        no management diagnostics (computer-management/protocol.md §7: see `diagnostics`)."""
        servers, _ = self._manager.public_configs()
        inputs = [public_input(item) for item in self._manager.inputs.definitions]
        return GetComputerConfigRet(servers=servers, inputs=inputs)

    def diagnostics(self) -> list[str]:
        """What the Computer's owner should know and no Agent is shown: configs that
        cannot be shown, unknown config fields, tool-name clashes, servers restarting
        (with the reason), windows, documents and skills left out or still being read."""
        _, notes = self._manager.public_configs()
        channels = [line for owner in (self._desktop, self._finder, self._skills) for line in owner.channel.diagnostics()]
        return [*notes, *self._catalog.diagnostics, *channels]

    def add_listener(self, listener: ServerListener) -> None:
        """Call `listener(event)` for every MCP server event (connected, disconnected,
        tools_changed, resources_list_changed, resource_updated, config_changed), on the
        Computer's event thread: it may block briefly and call back into the Computer."""
        self._listeners.append(listener)

    # -- internals ------------------------------------------------------------------------

    def _require_started(self) -> None:
        if self._inherited and not self._closed:
            raise self._inherited_error()
        if not self._started or self._closed:
            raise ComputerNotRunningError(f"Computer {self.name!r} is {'closed' if self._closed else 'not started'}")

    def _inherited_error(self) -> ComputerNotRunningError:
        return ComputerNotRunningError(
            f"Computer {self.name!r} was started before os.fork(): its MCP servers and threads belong to "
            f"process {parent_pid()}; start a Computer in the child process instead (gunicorn: the "
            "post_fork hook; Celery: the worker_process_init signal)"
        )

    def _on_server_events(self, batch: Sequence[ServerEvent]) -> None:
        kinds = {event.kind for event in batch}
        if kinds & _TOOL_EVENTS:
            self._refresh_tools()
        if "config_changed" in kinds:
            self._announce(events.UPDATE_CONFIG)
        self._watch.on_server_events(batch)
        for listener in list(self._listeners):
            for event in batch:
                try:
                    listener(event)
                except Exception:
                    log.exception("server event listener %r failed on %s", listener, event)

    def _settle(self, server: str, timeout: float) -> bool:
        """Wait up to `timeout` until what `server` announced so far is in force: its new
        tool list read and the catalogue rebuilt, its resource notices handled on the event
        thread and the listings they asked for done on its lane (`tools.calls`)."""
        deadline = time.monotonic() + timeout
        if not self._manager.tools_settled(server, timeout):
            return False
        handled = threading.Event()  # the event thread ran what was posted before it
        on_event_thread = threading.current_thread().name == self._events.name  # a listener's call: cannot wait
        if not on_event_thread and self._events.submit(handled.set):
            if not handled.wait(max(0.0, deadline - time.monotonic())):
                return False
        return self._watch.settle(server, max(0.0, deadline - time.monotonic()))

    def _refresh_tools(self) -> None:
        """Rebuild the tool list; announce it to the office when it changed."""
        with self._catalog_lock:
            old = self._catalog
            self._catalog = new = build_catalog(self._manager.snapshot())
        for diagnostic in sorted(set(new.diagnostics) - set(old.diagnostics)):
            log.warning("Computer %r: %s", self.name, diagnostic)
        if new.tools != old.tools:
            self._announce(events.UPDATE_TOOL_LIST)

    def _announce(self, event: str) -> None:
        self._socket.announce(event)
        for listener in list(self._update_listeners):
            try:
                listener(event)
            except Exception:
                log.exception("update listener %r failed on %s", listener, event)


def _open_in_browser(url: str) -> None:
    """`authorize`'s default `open_url`: the user's web browser (the redirect comes back
    to the loopback listener)."""
    import webbrowser

    if not webbrowser.open(url):
        log.warning("no web browser to open the authorization URL; pass authorize() an open_url")


def _with_configured_roots(
    features: ClientFeatures | None, roots: tuple[tuple[str, str | None], ...] | None
) -> ClientFeatures | None:
    """`features`, with the config document's ``roots`` when the host gave none."""
    if roots is None or (features is not None and features.roots is not None):
        return features
    return attrs.evolve(features or ClientFeatures(), roots=[Root(uri, name) for uri, name in roots])


def _scope_text(scopes: Sequence[str]) -> str:
    """`scopes` as OAuth writes them (space-separated); each one a non-empty word."""
    if isinstance(scopes, str) or not all(isinstance(s, str) and s and s.split() == [s] for s in scopes):
        raise ValueError(f"scopes must be a list of OAuth scopes, each one word, got {scopes!r}")
    return " ".join(scopes)


def _call_arguments(params: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
    """A caller's tool call arguments as a dict, checked with its `timeout` where they
    enter the Computer (the socket side checks an Agent's)."""
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return dict(params or {})
