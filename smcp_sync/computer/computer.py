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

from .._aliases import Aliases, MovedTo, refuse_unknown
from ..blobs import BlobHandles
from ..blobs.uploads import Uploads
from ..connection.credentials import AuthSource
from ..connection.session import ReconnectPolicy
from ..protocol import events
from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT, SERVER_TIMEOUT_BUFFER
from ..protocol.models import (
    MCPServerConfig,
)
from ..threads.forks import after_fork_in_child
from ..threads.gevent_order import require_same_threading, stdlib_patched
from ..threads.serial import Batches, SerialThread
from .channels.desktop import DesktopWindows
from .channels.finder_catalogue import FinderCatalogue
from .channels.reads import ResourceRequests
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
from .mcp.bridge import SHUTDOWN_GRACE, EventLoopThread
from .mcp.client_features import ClientAnswers, ClientFeatures, Root, Roots
from .mcp.manager import ServerManager
from .mcp.oauth import OpenUrl
from .mcp.policy import ServerPolicy
from .office_requests import OfficeRequests
from .server_admin import DEFAULT_START_TIMEOUT, MCPServers
from .options import BlobOptions, ChannelOptions, Inputs, SkillsOptions
from .mcp.status import ServerEvent, ServersNotStartedError, ServerState, ServerStatus
from .socket_side import SocketSide
from .tools.calls import ConfirmCallback, ToolCaller
from .tools.catalog import ToolCatalog, build_catalog
from .tools.history import ToolCallHistory, ToolCallRecord

log = logging.getLogger(__name__)

#: Seconds `authorize()` waits for the user by default.
DEFAULT_AUTHORIZE_TIMEOUT = 300.0

ServerListener = Callable[[ServerEvent], None]
#: Called with the `server:update_*` event name each time the Computer announces a change.
UpdateListener = Callable[[str], None]

#: The keywords Computer took before its value objects, kept one release (issue 35):
#: "alias:field" pairs of each value object.
_ALIASES = {
    group: Aliases("Computer", group, kind, dict(pair.split(":") for pair in pairs.split()))
    for group, kind, pairs in (
        ("inputs", Inputs, "inputs:definitions input_values:values input_resolver:resolver input_memory:memory"),
        ("channels", ChannelOptions, "update_debounce:update_debounce history_size:history_size"),
        ("skills", SkillsOptions, "user_skills:user_folder skill_home:home skill_max_size:max_size "
         "skill_inline_budget:inline_budget"),
        ("blobs", BlobOptions, "blob_handle_ttl:handle_ttl landing_folder:landing_folder upload_max_bytes:upload_max_bytes "
         "upload_idle_timeout:upload_idle_timeout"),
    )
}

_TOOL_EVENTS = frozenset({"connected", "disconnected", "tools_changed", "config_changed", "needs_authorization"})


class Computer(OfficeRequests):
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
        inputs = _ALIASES["inputs"].take(deprecated, inputs) or Inputs()
        channels = _ALIASES["channels"].take(deprecated, channels) or ChannelOptions()
        skills = _ALIASES["skills"].take(deprecated, skills) or SkillsOptions()
        blobs = _ALIASES["blobs"].take(deprecated, blobs) or BlobOptions()
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
        #: The MCP servers' admin face: add, remove, start, stop, restart, statuses.
        self.servers = MCPServers(
            self._manager,
            started=lambda: self._started,
            require_started=self._require_started,
            tools_changed=self._refresh_tools,
        )
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
        down = [s for s in self.servers.statuses() if s.state not in (ServerState.RUNNING, ServerState.DISABLED)]
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
        return f"<Computer {self.name!r} servers={[s.bundle_id for s in self.servers.statuses()]}>"

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

    # -- tools (the office's requests: `OfficeRequests`) --------------------------------

    def tool_call_history(self) -> tuple[ToolCallRecord, ...]:
        """Recent tool calls, oldest first."""
        return self._history.records()

    # -- listeners ------------------------------------------------------------------------

    def add_update_listener(self, listener: UpdateListener) -> None:
        """Call `listener(event)` each time the Computer announces a change to the office
        (`server:update_tool_list`, `_config`, `_desktop`, `_finder`, `_skills`), connected or not."""
        self._update_listeners.append(listener)

    # -- MCP servers ---------------------------------------------------------------------

    def add_tool_call_listener(self, listener: Callable[[ToolCallRecord], Any]) -> None:
        """Call `listener(record)` as each tool call routed to an MCP server ends
        (`ComputerMetrics`), on the Computer's event loop thread: it must not block."""
        self._history.watch(listener)

    #: Kept one release: the admin face is `servers` (issue 35).
    server_statuses = MovedTo("servers", "statuses")
    add_server = MovedTo("servers", "add")
    remove_server = MovedTo("servers", "remove")
    start_server = MovedTo("servers", "start")
    stop_server = MovedTo("servers", "stop")
    restart_server = MovedTo("servers", "restart")

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

