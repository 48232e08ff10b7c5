"""`SMCPServer`: the A2C-SMCP signaling Server on python-socketio's threading-mode Server.

It wires the handler groups (membership, broadcasts, routing) to the `/smcp` namespace
and offers three ways to run: as a WSGI app inside another server (`wsgi_app`,
`mount(app)`), embedded in a background thread (`start()` / `stop()`), or as a
production server in the foreground (`serve()`).
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

import attrs
import socketio

from .._aliases import Aliases
from ..protocol import conventions, events
from ..protocol.errors import NotFoundError
from ..protocol.events import NAMESPACE
from .auth import AuthProvider, as_provider
from .extra import server_extra
from .handlers.broadcasts import Broadcasts
from .handlers.membership import Membership
from .handlers.offices import Offices
from .handlers.pending import PendingCalls
from .handlers.routing import Router
from .limits.limits import (
    DEFAULT_SERVE_CONNECTIONS,
    DEFAULT_SERVE_THREADS,
    SERVE_MODES,
    ServerLimits,
)
from .limits.request_deadlines import RequestDeadlines
from .observability import Observability
from .observability.endpoints import WSGIApp
from .observability.view import OperatorView
from .offices.answers import answer_for
from .offices.office_rules import MAX_IDENTIFIER_LENGTH
from .offices.registry import InMemoryRegistry, OfficeRegistry
from .scale_out.redis_options import RedisOptions
from .transport.engine import SocketIOServer, StoppableRedisManager
from .transport.handshake import VersionGate

with server_extra():  # werkzeug and gunicorn: pip install 'smcp_sync[server]'
    from .transport.background_http import BackgroundHTTPServer
    from .transport.gunicorn_runner import GunicornServer, Served

logger = logging.getLogger(__name__)

#: Engine.IO's default (1 MB) drops the connection on one big tool result or document page.
DEFAULT_MAX_HTTP_BUFFER_SIZE = 16 * 1024 * 1024
#: How long `stop()` waits for connection threads to finish.
STOP_TIMEOUT = 5.0

_FIXED_OPTIONS = {"async_handlers": True}
#: python-socketio's async modes an SMCPServer runs in: "threading" (`start()`, `serve()`
#: with threads, any threaded WSGI server that hands over the raw socket) and "gevent"
#: (`serve(mode="gevent")`, or gunicorn's gevent worker around `mount()`; it needs the
#: standard library patched by gevent first, which that worker does).
ASYNC_MODES = ("threading", "gevent")

#: The keywords SMCPServer took before its value objects, kept one release (issue 35).
_LIMITS_ALIASES = Aliases("SMCPServer", "limits", ServerLimits, {name: name for name in attrs.fields_dict(ServerLimits)})
_REDIS_ALIASES = Aliases("SMCPServer", "redis", RedisOptions, {"redis_url": "url", "redis_prefix": "prefix"})


class SMCPServer:
    """The Server role: sessions, offices, routing of `client:*`, `notify:*` fan-out.

    `auth` is an `AuthProvider`, an API key (shortcut for `APIKeyAuth(key)`), or None to
    accept every client. Each other concern is one value object, validated when built:
    `limits`, what one client may hold (`ServerLimits`, docs/server/security.md);
    `redis`, the Redis that shares offices, emits and acks with every Server process given
    the same one (`RedisOptions`, docs/server/scale-out.md); `observability`, what an
    operator sees (`Observability`, docs/server/operations.md; the default has all but the
    Admin UI). `registry` replaces the in-memory office registry. Clients whose
    `a2c_version` is incompatible are refused before Socket.IO (HTTP 400, code 4008:
    `handshake`); those that send none (official 0.1.x SDKs) are accepted unless
    `require_client_version` is set. Other keyword arguments go to `socketio.Server`
    (`cors_allowed_origins`, `client_manager`, `ping_interval`, ...); `async_handlers` is
    fixed, and `async_mode` is "threading" (the default) or "gevent" (`ASYNC_MODES`).
    The flat keywords of `ServerLimits` and `redis_url` / `redis_prefix` are deprecated
    aliases, kept one release.
    """

    def __init__(
        self,
        auth: AuthProvider | str | None = None,
        *,
        limits: ServerLimits | None = None,
        redis: RedisOptions | None = None,
        observability: Observability | None = None,
        registry: OfficeRegistry | None = None,
        request_timeout: float = conventions.DEFAULT_REQUEST_TIMEOUT,
        tool_call_buffer: float = conventions.SERVER_TIMEOUT_BUFFER,
        max_http_buffer_size: int = DEFAULT_MAX_HTTP_BUFFER_SIZE,
        require_client_version: bool = False,
        **socketio_options: Any,
    ) -> None:
        limits = _LIMITS_ALIASES.take(socketio_options, limits) or ServerLimits()
        redis = _REDIS_ALIASES.take(socketio_options, redis)
        #: The same Server built again, in another async mode (`serve(mode="gevent")`
        #: builds it in gunicorn's worker, once gevent has patched the standard library):
        #: the value objects are plain data.
        self._rebuild = functools.partial(
            type(self),
            auth,
            limits=limits,
            redis=redis,
            observability=observability,
            registry=registry,
            request_timeout=request_timeout,
            tool_call_buffer=tool_call_buffer,
            max_http_buffer_size=max_http_buffer_size,
            require_client_version=require_client_version,
            **socketio_options,
        )
        if request_timeout <= 0 or tool_call_buffer < 0:
            raise ValueError("request_timeout must be > 0 and tool_call_buffer >= 0")
        for key, required in _FIXED_OPTIONS.items():
            if socketio_options.get(key, required) != required:
                raise ValueError(f"SMCPServer needs {key}={required!r}")
        socketio_options.setdefault("async_mode", "threading")
        _check_async_mode(socketio_options["async_mode"])
        if redis is not None:
            registry, socketio_options["client_manager"] = _shared_through_redis(redis, registry, socketio_options)
        options = {"namespaces": [NAMESPACE], **socketio_options, **_FIXED_OPTIONS}
        #: Bounds on what one client may hold (docs/server/security.md); the HTTP ones apply to
        #: `start()` and `serve()`, the others to every way of running.
        self.limits = limits
        self.sio = SocketIOServer(limits=self.limits, max_http_buffer_size=max_http_buffer_size, **options)
        #: Messages for a client that could not be sent (its connection was dropped, or it
        #: was closing): counted, never raised into the thread that emits.
        self.send_failures = self.sio.eio.send_failures
        self.registry = registry if registry is not None else InMemoryRegistry()
        self.pending = PendingCalls(self.sio)
        self._stopped = False
        #: What an operator sees (docs/server/operations.md): probes, metrics, audit, Admin UI.
        self.operator = OperatorView(
            observability or Observability(),
            self.sio,
            self.registry,
            pending=lambda: len(self.pending),
            accepting=lambda: not self._stopped,
        )
        offices = Offices(self.sio, self.registry, fanned_out=self.operator.fanned_out)
        membership = Membership(
            offices, as_provider(auth), on_session_gone=self.pending.peer_gone, watcher=self.operator.watcher
        )
        broadcasts = Broadcasts(offices)
        router = Router(offices, self.pending, request_timeout, tool_call_buffer)
        self.registry.attach(membership)

        self.sio.on("connect", membership.connect, namespace=NAMESPACE)
        self.sio.on("disconnect", membership.disconnect, namespace=NAMESPACE)
        self._handle(events.JOIN_OFFICE, membership.join)
        self._handle(events.LEAVE_OFFICE, membership.leave)
        self._handle(events.LIST_ROOM, membership.list_room)
        self._handle(events.CANCEL_TOOL_CALL, broadcasts.cancel_tool_call)
        for event in events.UPDATE_TO_NOTIFICATION:
            self._handle(event, broadcasts.update_handler(event))
        for event in events.CLIENT_EVENTS:
            self._handle(event, router.handler_for(event))
        self.sio.handle_inline(events.CLIENT_EVENTS)  # routing never blocks: it answers with a Future
        if self.registry.in_process and "client_manager" not in socketio_options:
            # nor do the Server's own requests when nothing they touch waits on I/O: one
            # hand-off less for each (benchmarks/README.md, capacity)
            self.sio.handle_inline(events.SERVER_EVENTS)
        self.sio.on("*", _refuse_unknown_event, namespace=NAMESPACE)

        self.require_client_version = require_client_version
        self.wsgi_app = self._gated(socketio.WSGIApp(self.sio))
        self._lock = threading.Lock()
        self._http: BackgroundHTTPServer | None = None

    def _handle(self, event: str, body: Any) -> None:
        self.sio.on(event, self.operator.observe(event, answer_for(event)(body)), namespace=NAMESPACE)

    # -- running inside another WSGI server ------------------------------------------------

    def mount(self, app: Any) -> WSGIApp:
        """A WSGI app serving Socket.IO at ``/socket.io`` and everything else with `app`
        (Flask: ``flask_app.wsgi_app = server.mount(flask_app.wsgi_app)``; Django:
        ``application = server.mount(get_wsgi_application())``)."""
        return self._gated(socketio.WSGIApp(self.sio, app))

    def _gated(self, app: socketio.WSGIApp) -> WSGIApp:
        """`app` behind the version handshake and the operator's paths (`/health/...`)."""
        return self.operator.endpoints(VersionGate(app, require_client_version=self.require_client_version))

    # -- embedded: a background thread ------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve from background threads (werkzeug); return the bound URL, e.g.
        ``http://127.0.0.1:54321``. For tests, notebooks, demos and embedding."""
        with self._lock:
            if self._http is not None:
                raise RuntimeError(f"already serving on {self._http.url}")
            if self._stopped:
                raise RuntimeError("a stopped SMCPServer cannot be started again; create a new one")
            if self.sio.async_mode != "threading":
                raise RuntimeError(f"start() serves from threads: this Server's async_mode is {self.sio.async_mode!r}")
            self._http = BackgroundHTTPServer(self.wsgi_app, host, port, self._request_deadlines())
            self._http.start()
            logger.info("SMCP server listening on %s", self._http.url)
            return self._http.url

    @property
    def url(self) -> str | None:
        """The URL `start()` bound, while serving."""
        http = self._http
        return http.url if http is not None else None

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop what `start()` began and join its threads: stop accepting, drop every
        connection (clients see a lost transport), end Engine.IO's background threads.
        Safe to call twice."""
        with self._lock:
            http, self._http = self._http, None
            self._stopped = True
        if http is not None:
            http.stop_accepting(timeout)
        self.operator.stopping()
        self.sio.eio.end()
        self.drop_connections()
        self.operator.close(timeout)
        if http is not None:
            stuck = http.join_connections(timeout)
            if stuck:
                logger.warning("connection threads still running after %.1f s: %s", timeout, stuck)
            # A connection thread that ran on after the drop (a handshake, a routed request
            # under way) may have started a timer thread again: stop them once more.
            self.sio.eio.deadlines.shutdown()
            self.pending.shutdown()
        self._leave_cluster()

    def _leave_cluster(self) -> None:
        """Stop the shared registry's threads and the Redis listener (after the
        connections are dropped: their sessions leave the shared offices first)."""
        self.registry.close()
        manager = self.sio.manager
        if isinstance(manager, StoppableRedisManager):
            manager.close()

    def drop_connections(self) -> None:
        """Drop every Socket.IO connection now and stop Engine.IO's background threads.
        Each dropped session leaves its office (notifications go out) and its pending
        forwarded calls fail at once."""
        self.sio.eio.drop_all_connections()
        self.sio.shutdown()
        self.pending.shutdown()

    def __enter__(self) -> SMCPServer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- foreground: production ---------------------------------------------------------------

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        mode: str = "threads",
        threads: int = DEFAULT_SERVE_THREADS,
        connections: int = DEFAULT_SERVE_CONNECTIONS,
        on_ready: Any = None,
    ) -> None:
        """Serve in the foreground under gunicorn (one worker process) until Ctrl-C or
        SIGTERM (after a clean stop, Ctrl-C raises KeyboardInterrupt). Call from the main
        thread. `on_ready(url)` is called once the socket is bound.

        `mode="threads"`: the `gthread` worker, at most `threads` requests handled at
        once; an open websocket leaves its thread for the one reactor thread that reads
        them all, at most `connections` of them. `mode="gevent"` (the `gevent` extra):
        gunicorn's gevent worker, at most `connections` open connections, each a few
        greenlets; the worker
        builds this Server anew from the same arguments after gevent has patched the
        standard library (docs/server/deployment.md). See `gunicorn_runner` for why gunicorn."""
        if mode not in SERVE_MODES:
            raise ValueError(f"mode must be one of {', '.join(SERVE_MODES)}, got {mode!r}")
        if mode == "threads" and self.sio.async_mode != "threading":
            raise ValueError(f"mode='threads' needs async_mode='threading', not {self.sio.async_mode!r}")
        built: list[SMCPServer] = []

        def build() -> Served:
            if mode == "gevent":
                # this Server is not the one served: undo what it did process-wide first
                # (python-socketio's instrument() cannot be stacked: the Admin UI's patches)
                self.operator.close(timeout=0)
            server = self if mode == "threads" else self._rebuild(async_mode="gevent")
            if mode == "threads":
                server.sio.eio.read_on_one_thread(connections)  # gthread lets go of a websocket's socket
            built.append(server)
            return Served(server.wsgi_app, server.drop_connections, server._request_deadlines())

        try:
            GunicornServer(
                build,
                host=host,
                port=port,
                mode=mode,
                threads=threads,
                connections=connections,
                header_timeout=self.limits.header_timeout,
                on_ready=on_ready,
            ).serve()
        finally:
            for server in {self, *built}:
                server._leave_cluster()

    def _request_deadlines(self) -> RequestDeadlines:
        return RequestDeadlines(self.limits.header_timeout, self.limits.read_timeout)


def _check_async_mode(mode: str) -> None:
    """python-socketio's gevent mode with our threads (deadlines, handler pools, Redis
    clients) works only once gevent has patched the standard library."""
    if mode not in ASYNC_MODES:
        raise ValueError(f"SMCPServer's async_mode is one of {', '.join(ASYNC_MODES)}, got {mode!r}")
    if mode == "gevent":
        try:
            from gevent import monkey
        except ImportError as exc:
            raise RuntimeError("async_mode='gevent' needs gevent: pip install 'smcp_sync[gevent]'") from exc
        if not monkey.is_module_patched("threading"):
            raise RuntimeError(
                "async_mode='gevent' needs the standard library patched by gevent first "
                "(gunicorn's gevent worker does it; serve(mode='gevent') runs that worker)"
            )


def _shared_through_redis(
    redis: RedisOptions, registry: Any, socketio_options: dict[str, Any]
) -> tuple[OfficeRegistry, StoppableRedisManager]:
    """The office registry and the Socket.IO client manager of a node of a scale-out,
    every key and channel under the deployment's prefix."""
    if registry is not None or "client_manager" in socketio_options:
        raise ValueError("redis sets the registry and the client_manager; pass neither with it")
    try:
        from .scale_out.redis_connection import manager_options
        from .scale_out.redis_registry import RedisRegistry
    except ImportError as exc:  # the redis client is an optional extra
        raise RuntimeError("redis needs the redis client: pip install 'smcp_sync[redis]'") from exc
    # the registry refuses a URL of a form the manager does not take either
    registry = RedisRegistry(redis.url, node_ttl=redis.node_ttl, prefix=redis.prefix)
    return registry, StoppableRedisManager(redis.url, channel=registry.prefix + "socketio", redis_options=manager_options())


def _refuse_unknown_event(event: str, sid: str, *args: Any) -> dict[str, Any]:
    """Answer events the Server does not handle, so a caller never waits for nothing.
    The name is quoted cut short: it is the caller's, of any length."""
    shown = event if len(event) <= MAX_IDENTIFIER_LENGTH else event[:MAX_IDENTIFIER_LENGTH] + "..."
    logger.info("refused unknown event %r from %s", shown, sid)
    return NotFoundError(f"unknown event {shown!r}", details={"event": shown}).to_wire()
