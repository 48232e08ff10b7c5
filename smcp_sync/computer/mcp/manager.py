"""The Computer's MCP servers, seen from sync code: configuration order, lifecycle, and
thin blocking wrappers over each server's session.

Configs are rendered (`config.variables`, then the inputs) when added (so a bad or
unresolvable config is an error of the call that adds it, naming the field). Lifecycle
operations are serialised by one lock that is never taken on the loop; reads use
snapshots.

The resource primitives (`list_resources`, `read_resource`, `subscribe_resource`,
`complete`) are the seam for Desktop and Finder: they raise `SMCPError`s. An unknown
server is 4014, a server that did not declare the capability a request needs 4015
(spec-0.3/error-handling.md); how an MCP server's own failure becomes a code is
`failures.request_error`'s (the one place for that).
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Awaitable, Callable, Mapping, Sequence, TypeVar

import anyio

from ...protocol.codec import from_wire, to_wire
from ...protocol.errors import (
    BadRequestError,
    CapabilityNotSupportedError,
    MCPServerNotFoundError,
    SMCPError,
    cut_short,
)
from ...protocol.models import (
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    MCPServerConfig,
    Resource,
    ResourceContents,
    StdioServerConfig,
)
from ...protocol.models._fields import evolve
from ..config.env_file import check_env_file
from ..config.fields import refuse_unsupported, unknown_fields
from ..config.files import ConfigError, server_bundle_id
from ..config.inputs import InputResolver, placeholders
from ..config.oauth_mode import IdentityAssertion, oauth_mode, secret_inputs
from ..config.oauth_store import OAuthTokenStore, default_token_store
from ..config.redaction import public_server_config
from ..config.variables import render_variables
from ..config.vrl import VrlScript, compile_script
from .adapter import (
    MAX_PAGES,
    McpRequestFailed,
    McpSession,
)
from .bridge import BridgeClosedError, EventLoopThread
from .client_features import ClientAnswers, Roots
from .failures import REQUEST_FAILURES, request_error
from .oauth import (
    ClientSecrets,
    OAuthAuthorizationError,
    OpenUrl,
    StepUp,
    authorize,
    forget_tokens,
    resolve_secrets,
    session_auth,
)
from .policy import ServerPolicy
from .server_connection import ServerConnection
from .status import ServerEvent, ServerState, ServerStatus

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Extra seconds a blocking wrapper waits beyond the request's own timeout (the loop
#: enforces the timeout; this only guards against a stuck loop).
WAIT_GRACE = 2.0

#: Requests of one `request_each` in flight at once on one MCP server: enough to hide the
#: round-trip latency, few enough not to flood a server (or its stdio pipe).
BATCH_CONCURRENCY = 16

class ServerManager:
    def __init__(
        self,
        bridge: EventLoopThread,
        publish: Callable[[ServerEvent], None],
        inputs: InputResolver,
        policy: ServerPolicy,
        oauth_store: OAuthTokenStore | None = None,
        client: ClientAnswers | None = None,
    ) -> None:
        self._bridge = bridge
        #: The host's answers to what the MCP servers ask of their client (`client_features`).
        self.client = client if client is not None else ClientAnswers(None)
        self._oauth_store = oauth_store
        self._publish = publish
        self.inputs = inputs
        self._policy = policy
        self._raw: dict[str, dict[str, Any]] = {}
        self._connections: dict[str, ServerConnection] = {}
        self._scripts: dict[str, VrlScript | None] = {}
        #: The cancel scope of the authorization flow running for a server (`authorize`).
        self._authorizing: dict[str, anyio.CancelScope] = {}
        self._admin = threading.RLock()  # serialises lifecycle changes (may wait on the loop)
        self._data = threading.Lock()  # guards the three dicts (held only for dict operations)

    # -- configuration ----------------------------------------------------------------

    def configure(self, config: Mapping[str, Any] | MCPServerConfig) -> MCPServerConfig:
        """Validate `config` (rendering its input placeholders) and register it, stopped,
        under its bundle_id (resolved from the raw config, `protocol.bundle_id`; set in the
        returned model). Replaces the config of the same bundle_id, keeping its place in the
        order (the spec's runtime update in place)."""
        raw = dict(to_wire(config)) if not isinstance(config, Mapping) else dict(config)
        bundle_id = server_bundle_id(raw)
        refuse_unsupported(raw, bundle_id)
        parsed: MCPServerConfig = from_wire(MCPServerConfig, self.inputs.render(render_variables(raw)))
        model = evolve(parsed, bundle_id=bundle_id)
        script = compile_script(model.vrl, bundle_id)
        check_env_file(model)
        auth = None
        if getattr(model, "oauth", None) is not None:
            secrets = resolve_secrets(model, self.inputs.value)  # off the loop: an input may ask
            # the store is made here, off the loop (a keyring backend is looked up)
            self._check_assertion_source(model)
            features = self.client.features
            step_up = self._step_up(model, secrets)
            store = self.oauth_store()
            auth = functools.partial(session_auth, model, store, secrets, step_up, features.identity_assertion)
        for unknown in unknown_fields(raw):
            log.warning("MCP server %r: field %r is not known to smcp_sync; ignored", bundle_id, unknown)
        with self._admin:
            old = self._connection_or_none(bundle_id)
            if old is not None:
                self._stop(old)
            connection = ServerConnection(model, self._policy, self._publish, self._bridge.spawn, auth, self.client)
            with self._data:
                self._raw[bundle_id] = raw
                self._connections[bundle_id] = connection
                self._scripts[bundle_id] = script
        self._publish(ServerEvent(server=bundle_id, kind="config_changed", status=connection.status))
        return model

    def reconfigure_using(self, input_id: str, timeout: float) -> list[str]:
        """Configure again every server whose config names `input_id` (rendering its
        current value), restarting those that were running; returns their bundle_ids."""
        with self._admin:
            with self._data:
                raws = list(self._raw.items())
                using = [(b, raw, self._connections[b].active) for b, raw in raws if input_id in _inputs_named(raw)]
            for bundle_id, raw, active in using:
                self.configure(raw)
                if active:
                    self.start(bundle_id, timeout)
        return [bundle_id for bundle_id, _, _ in using]

    def remove(self, bundle_id: str) -> None:
        with self._admin:
            connection = self._connection(bundle_id)
            self._stop(connection)
            with self._data:
                del self._raw[bundle_id], self._connections[bundle_id], self._scripts[bundle_id]
        self._publish(ServerEvent(server=bundle_id, kind="config_changed"))

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, name: str, timeout: float) -> ServerStatus:
        """Start one server and wait (up to `timeout`) for its first attempt's outcome."""
        with self._admin:
            connection = self._connection(name)
            if connection.config.disabled:
                raise BadRequestError(
                    f"MCP server {name!r} is disabled in its configuration", details={"mcp_server": name}
                )
            self._start_all([connection], timeout)
            return connection.status

    def start_enabled(self, timeout: float) -> None:
        """Start every enabled server concurrently; wait (bounded) for first outcomes."""
        with self._admin:
            self._start_all([c for c in self.connections() if not c.config.disabled], timeout)

    def stop(self, name: str) -> None:
        with self._admin:
            self._stop(self._connection(name))

    def stop_all(self) -> None:
        with self._admin:
            connections = [c for c in self.connections() if c.active]
            if connections:
                self._bridge.run(_gather(c.stop() for c in connections), self._policy.stop_timeout * 2 + WAIT_GRACE)

    def restart(self, name: str, timeout: float) -> ServerStatus:
        with self._admin:
            self._stop(self._connection(name))
            return self.start(name, timeout)

    def oauth_store(self) -> OAuthTokenStore:
        """The store of OAuth credentials (the default one is made on first use)."""
        with self._data:
            if self._oauth_store is None:
                self._oauth_store = default_token_store()
            return self._oauth_store

    def authorize(
        self, name: str, open_url: OpenUrl, timeout: float, redirect_uri: str | None, scopes: str | None = None
    ) -> ServerStatus:
        """Run the OAuth flow for one server (`oauth.authorize`; with `scopes`, the user is
        asked again for them), then reconnect it if it is started."""
        config = self._connection(name).config
        secrets = resolve_secrets(config, self.inputs.value)
        store = self.oauth_store()

        async def cancellable() -> None:
            with anyio.CancelScope() as scope:
                with self._data:
                    self._authorizing[name] = scope
                try:
                    await authorize(
                        config, store, secrets, open_url, redirect_uri, timeout, self._policy.request_timeout, scopes,
                        identity_assertion=self.client.features.identity_assertion,
                    )  # fmt: skip
                    return
                finally:
                    with self._data:
                        if self._authorizing.get(name) is scope:
                            del self._authorizing[name]
            raise OAuthAuthorizationError(  # cancelled, once the flow has closed its listener
                f"authorization of MCP server {name!r} was cancelled", details={"mcp_server": name}
            )

        try:
            self._bridge.run(cancellable(), timeout + WAIT_GRACE)  # the flow ends itself at `timeout`
        except TimeoutError:
            raise TimeoutError(f"MCP server {name!r} was not authorized within {timeout:g}s") from None
        return self._reconnect(name, timeout)

    def set_roots(self, roots: Roots, timeout: float) -> None:
        """Answer ``roots/list`` with `roots` from now on, and tell every running server
        (``notifications/roots/list_changed``; one that cannot be told is logged)."""
        self.client.set_roots(roots)
        running = [c for c in self.connections() if c.status.running]
        told = [functools.partial(c.request, _tell_roots_changed, timeout) for c in running]
        rounds = -(-len(told) // BATCH_CONCURRENCY)
        outcomes = self._bridge.run(_each_bounded(told, REQUEST_FAILURES), timeout * rounds + WAIT_GRACE)
        for connection, outcome in zip(running, outcomes):
            if isinstance(outcome, BaseException):
                failure = request_error(connection.bundle_id, outcome, "notifications/roots/list_changed", timeout)
                log.warning("MCP server %r was not told its roots changed: %s", connection.bundle_id, failure.message)

    def forget_authorization(self, name: str, timeout: float) -> ServerStatus:
        """Drop the server's stored OAuth token (its client registration is kept), then
        reconnect it if it is started: it needs an authorization again."""
        config = self._connection(name).config
        if isinstance(config, StdioServerConfig) or config.oauth is None:
            raise BadRequestError(f"MCP server {name!r} has no oauth block in its configuration", details={"mcp_server": name})
        forget_tokens(config, self.oauth_store())
        return self._reconnect(name, timeout)

    def _reconnect(self, name: str, timeout: float) -> ServerStatus:
        """Restart the server if it is started (its new credentials apply); its status."""
        with self._admin:
            connection = self._connection(name)
            return self.restart(name, timeout) if connection.active else connection.status

    def _check_assertion_source(self, config: MCPServerConfig) -> None:
        """An ``identityAssertion`` mode needs its assertion from somewhere: its
        ``assertionInput``, or the host's `ClientFeatures.identity_assertion`."""
        options = getattr(config, "oauth", None)
        server = config.bundle_id or config.name
        mode = oauth_mode(options.mode, server) if options is not None else None
        if isinstance(mode, IdentityAssertion) and mode.assertion_input is None:
            if self.client.features.identity_assertion is None:
                raise ConfigError(
                    f"MCP server {server!r}: field 'oauth.mode.assertionInput' is required unless the Computer is given "
                    "ClientFeatures(identity_assertion=...)",
                    details={"field": "oauth.mode.assertionInput", "mcp_server": server},
                )

    def _step_up(self, config: MCPServerConfig, secrets: ClientSecrets) -> StepUp | None:
        """How a connection to `config`'s server authorizes a wider scope during a call:
        the user sent through the host's `ClientFeatures.open_url`, as `authorize` does
        (None: the host gave no way to reach the user; such a call is 4007)."""
        features = self.client.features
        if features.open_url is None:
            return None
        return functools.partial(
            authorize, config, self.oauth_store(), secrets, features.open_url, features.redirect_uri,
            features.timeout, self._policy.request_timeout,
        )  # fmt: skip

    def cancel_authorization(self, name: str) -> bool:
        """Stop the authorization flow running for one server (its `authorize` raises);
        False when none runs."""
        with self._data:
            scope = self._authorizing.get(name)
        if scope is None:
            return False
        self._bridge.run(_cancel(scope), WAIT_GRACE)  # a cancel scope is cancelled on its loop
        return True

    # -- reads ----------------------------------------------------------------------------

    def connections(self) -> list[ServerConnection]:
        with self._data:
            return list(self._connections.values())

    def snapshot(self) -> list[tuple[MCPServerConfig, ServerStatus]]:
        """Every server's (config, status), in configuration order."""
        return [(c.config, c.status) for c in self.connections()]

    def status(self, name: str) -> ServerStatus:
        return self._connection(name).status

    def public_configs(self) -> tuple[dict[str, MCPServerConfig], list[str]]:
        """Configs fit to show (secrets redacted) by bundle_id, each with its resolved
        `bundle_id`, and notes on those that cannot be shown."""
        with self._data:
            raws = list(self._raw.items())
        shown: dict[str, MCPServerConfig] = {}
        notes: list[str] = []
        for bundle_id, raw in raws:
            config = public_server_config(raw, self.inputs)
            if config is None:
                notes.append(
                    f"configuration of MCP server {bundle_id!r} is not shown: it cannot be shown without secrets"
                )
            else:
                shown[bundle_id] = evolve(config, bundle_id=bundle_id)
            notes += [
                f"MCP server {bundle_id!r}: field {field!r} is not known to smcp_sync and is ignored"
                for field in unknown_fields(raw)
            ]
        return shown, notes

    def vrl_script(self, server: str) -> VrlScript | None:
        """The server's compiled `vrl` script (None: no script, or no such server)."""
        with self._data:
            return self._scripts.get(server)

    # -- requests -------------------------------------------------------------------------

    def connection(self, server: str) -> ServerConnection:
        """The server's supervised connection, for requests made on the loop (tool calls);
        4014 for an unknown server."""
        return self._connection(server)

    def tools_settled(self, server: str, timeout: float) -> bool:
        """Wait up to `timeout` until the server's `tools/list_changed` notices so far
        have had their `tools/list` answered; False if one is still under way."""
        connection = self._connection_or_none(server)
        if connection is None:
            return True
        try:
            self._bridge.run(connection.tools_settled(), timeout)
        except TimeoutError:
            return False
        except BridgeClosedError:  # closing: nothing more will change
            pass
        return True

    def list_resources(self, server: str, timeout: float) -> list[Resource]:
        """Every page of the server's `resources/list`."""

        async def all_pages(session: McpSession) -> list[Resource]:
            resources: list[Resource] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page, next_cursor = await session.list_resources(cursor)
                resources.extend(page)
                if not next_cursor or next_cursor == cursor:
                    return resources
                cursor = next_cursor
            raise McpRequestFailed(f"resources/list did not end after {MAX_PAGES} pages")

        return self.request(server, all_pages, timeout, "resources/list")

    def list_resources_page(self, server: str, cursor: str | None, timeout: float) -> tuple[list[Resource], str | None]:
        self._require(server, "resources")
        return self.request(server, lambda s: s.list_resources(cursor), timeout, "resources/list")

    def read_resource(self, server: str, uri: str, timeout: float) -> list[ResourceContents]:
        self._require(server, "resources")
        return self.request(server, lambda s: s.read_resource(uri), timeout, f"resources/read {cut_short(repr(uri))}")

    def read_resources(
        self, server: str, uris: Sequence[str], timeout: float
    ) -> list[list[ResourceContents] | SMCPError]:
        """`resources/read` of each of `uris` (see `request_each`): contents or failure, in order."""
        return self.request_each(
            server, [(_reader(uri), f"resources/read {cut_short(repr(uri))}") for uri in uris], timeout
        )  # fmt: skip

    def subscribe_resource(self, server: str, uri: str, timeout: float) -> None:
        self.request(server, lambda s: s.subscribe_resource(uri), timeout, f"resources/subscribe {cut_short(repr(uri))}")

    def subscribe_resources(self, server: str, uris: Sequence[str], timeout: float) -> list[SMCPError | None]:
        """`resources/subscribe` to each of `uris` (see `request_each`): None or the failure, in order."""
        return self.request_each(
            server, [(_subscriber(uri), f"resources/subscribe {cut_short(repr(uri))}") for uri in uris], timeout
        )  # fmt: skip

    def complete(
        self,
        server: str,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
        timeout: float,
    ) -> Completion:
        self._require(server, "completions")
        return self.request(server, lambda s: s.complete(ref, argument, context), timeout, "completion/complete")

    def request(self, server: str, operation: Callable[[McpSession], Awaitable[T]], timeout: float, what: str) -> T:
        """Run `operation` on the server's live session; failures as `SMCPError`s."""
        connection = self._connection(server)
        try:
            return self._bridge.run(connection.request(operation, timeout), timeout + WAIT_GRACE)
        except REQUEST_FAILURES as exc:
            raise request_error(server, exc, what, timeout) from None

    def request_each(
        self, server: str, operations: Sequence[tuple[Callable[[McpSession], Awaitable[T]], str]], timeout: float
    ) -> list[T | SMCPError]:
        """Run each `(operation, what)` on the server's live session, each within `timeout`:
        one submission to the loop that keeps `BATCH_CONCURRENCY` in flight, so N requests
        cost about N / BATCH_CONCURRENCY round trips, not N. Each result or failure (as an
        `SMCPError`), in order; one failing does not stop the others."""
        if not operations:
            return []
        connection = self._connection(server)
        requests = [functools.partial(connection.request, operation, timeout) for operation, _ in operations]
        rounds = -(-len(requests) // BATCH_CONCURRENCY)
        try:
            outcomes = self._bridge.run(_each_bounded(requests, REQUEST_FAILURES), timeout * rounds + WAIT_GRACE)
        except TimeoutError as exc:
            outcomes = [exc] * len(requests)
        return [
            request_error(server, outcome, what, timeout) if isinstance(outcome, BaseException) else outcome
            for outcome, (_, what) in zip(outcomes, operations)
        ]

    # -- internals ------------------------------------------------------------------------

    def _connection(self, name: str) -> ServerConnection:
        connection = self._connection_or_none(name)
        if connection is None:
            raise MCPServerNotFoundError(
                f"no MCP server named {cut_short(repr(name))}", fields={"mcp_server": cut_short(name)}
            )
        return connection

    def _require(self, server: str, capability: str) -> None:
        """4015 when `server` is known not to have declared `capability` (a server that has
        not initialized yet is asked anyway: its own answer says)."""
        capabilities = self.status(server).capabilities
        if capabilities is not None and not getattr(capabilities, capability):
            raise CapabilityNotSupportedError(
                f"MCP server {server!r} does not support {capability!r} (it did not declare the capability)",
                fields={"mcp_server": server, "capability": capability},
            )

    def _connection_or_none(self, name: str) -> ServerConnection | None:
        with self._data:
            return self._connections.get(name)

    def _start_all(self, connections: list[ServerConnection], timeout: float) -> None:
        if not connections:
            return
        try:
            self._bridge.run(_gather(c.start() for c in connections), timeout)
        except TimeoutError:
            pending = [c.bundle_id for c in connections if c.status.state is ServerState.STARTING]
            log.warning("MCP servers %s still starting after %.1fs; they go on in the background", pending, timeout)

    def _stop(self, connection: ServerConnection) -> None:
        if connection.active:
            self._bridge.run(connection.stop(), self._policy.stop_timeout * 2 + WAIT_GRACE)


async def _tell_roots_changed(session: McpSession) -> None:
    await session.roots_changed()


def _reader(uri: str) -> Callable[[McpSession], Awaitable[list[ResourceContents]]]:
    return lambda session: session.read_resource(uri)


def _subscriber(uri: str) -> Callable[[McpSession], Awaitable[None]]:
    return lambda session: session.subscribe_resource(uri)


async def _gather(coros: Any) -> None:
    """Await `coros` concurrently (each is a start/stop, which does not raise)."""
    async with anyio.create_task_group() as tasks:
        for coro in coros:
            tasks.start_soon(_await, coro)


def _inputs_named(raw: Mapping[str, Any]) -> set[str]:
    """The inputs a config uses: its placeholders and its oauth block's secret inputs."""
    oauth = raw.get("oauth")
    named = placeholders(raw)
    if isinstance(oauth, Mapping):
        named |= set(secret_inputs(oauth_mode(oauth.get("mode"), server_bundle_id(raw))))
    return named


async def _cancel(scope: anyio.CancelScope) -> None:
    scope.cancel()


async def _await(coro: Awaitable[Any]) -> None:
    await coro


async def _each_bounded(
    requests: Sequence[Callable[[], Awaitable[T]]], expected: tuple[type[BaseException], ...]
) -> list[T | BaseException]:
    """Await every request, in order, by `BATCH_CONCURRENCY` workers (a task per worker,
    not per request: a batch has hundreds); an `expected` failure becomes that request's
    outcome (any other error is a bug, and fails the batch)."""
    outcomes: list[Any] = [None] * len(requests)
    todo = iter(range(len(requests)))  # shared: each request is taken by one worker

    async def worker() -> None:
        for index in todo:
            try:
                outcomes[index] = await requests[index]()
            except expected as exc:
                outcomes[index] = exc

    async with anyio.create_task_group() as tasks:
        for _ in range(min(BATCH_CONCURRENCY, len(requests))):
            tasks.start_soon(worker)
    return outcomes
