"""`SMCPServer.serve()`: the Server under gunicorn, with the `gthread` worker (mode
"threads") or the gevent one (mode "gevent", `gevent_worker.py`).

Why gunicorn/gthread: among the WSGI servers that can hand the raw socket to
simple-websocket (needed for the websocket upgrade in threading mode), it is the one
built for production — a supervising master, worker restarts, signal handling — and it
closes client connections promptly (docs/ARCHITECTURE.md, Library facts). Waitress and cheroot cannot upgrade;
werkzeug is a development server.

Reading a request is bounded (`request_deadlines`): gthread waits a few seconds for a
connection's first bytes without a thread, but a request line sent half-way holds a
worker thread for as long as the client keeps the connection open.

A websocket, once open, leaves its gthread worker thread: the request ends with
`reactor.HandedOver` and the one reactor thread reads the socket from then on
(`reactor.py`; before, each websocket held its worker thread and Engine.IO's writer for
its whole life, and at 3,000 offices the Server answered nothing: benchmarks/README.md,
Run Z). gthread then closes nothing of it (`_BoundedThreadWorker.handle_request`).

Why gevent too: it is the deployment python-socketio documents for its sync Server,
and a connection there is greenlets, no thread at all. The worker patches the standard
library before it loads the app, so the app is built there (`build`), after the patch:
every lock, event and thread the Server makes is then gevent's.

Exactly one worker process: sessions, offices and pending calls live in that process
(several processes need a shared registry and a message queue). gunicorn's
`worker_connections` caps the connections the worker holds: twice `threads` in mode
"threads", besides the websockets the reactor reads (at most `connections`:
`StoppableEngineIO.read_on_one_thread`), `connections` in mode "gevent".

Shutdown: Ctrl-C (SIGINT), SIGQUIT and SIGTERM all end within about a second: the worker
first drops every Socket.IO connection (a worker still booting ends at once:
`_stop_at_once_while_booting`). Clients see a lost transport, not a
server-initiated disconnect, so they reconnect once a Server is back (a restart keeps
Computers and Agents coming back). After a clean stop on Ctrl-C, `serve()` raises
KeyboardInterrupt, as Python's own servers do, so callers (the CLI: exit 130) can tell it
from SIGTERM, which returns normally.

gunicorn's own log lines (starting, booting worker...) follow this module's logger: at
INFO and below when smcp_sync logs INFO, otherwise warnings and errors only.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import math
import os
import resource
import signal
from typing import Any, Callable, NamedTuple

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.workers.gthread import ThreadWorker

from ..limits.request_deadlines import RequestDeadlines
from .reactor import HandedOver

logger = logging.getLogger(__name__)

#: The worker class of each of `serve()`'s modes (`limits.SERVE_MODES`), as dotted paths
#: (gunicorn 22 takes no class object; the gevent one is imported only when asked for:
#: the `gevent` extra).
WORKER_CLASSES = {
    "threads": f"{__name__}._BoundedThreadWorker",
    "gevent": "smcp_sync.server.transport.gevent_worker.BoundedGeventWorker",
}
#: Seconds the master waits for its worker to stop before it kills it.
GRACEFUL_TIMEOUT = 10
#: gthread accepts this many times `threads` connections.
KEEPALIVE_FACTOR = 2
#: File descriptors the worker keeps besides its connections (listening socket, logs,
#: Redis, the interpreter's own).
SPARE_FILES = 256
#: The worker's garbage collector thresholds (`gc.set_threshold`; CPython's are 2,000,
#: 10, 10). A routed call lives as long as it waits, about a second at 1,000 offices
#: calling at once: with the default, its objects outlived the young collections, went
#: up to the oldest generation and brought on full collections, each scanning every
#: connection's objects (~200 ms apiece, 3-7 in a 40 s run): CPU per call grew with the
#: offices (benchmarks/README.md, routing at size). Collected 25x less often, a call's
#: objects are freed (by their reference counts) before a collection sees them; only
#: cyclic garbage waits longer.
GC_THRESHOLDS = (50_000, 20, 10)


class Served(NamedTuple):
    """What the worker serves: the WSGI app, how to drop every connection at a stop
    signal, and the request head deadlines its worker class applies."""

    wsgi_app: Any
    drop_connections: Callable[[], None]
    request_deadlines: RequestDeadlines


class GunicornServer(BaseApplication):
    def __init__(
        self,
        build: Callable[[], Served],
        *,
        host: str,
        port: int,
        mode: str,
        threads: int,
        connections: int,
        header_timeout: float,
        on_ready: Callable[[str], Any] | None = None,
    ) -> None:
        if threads < 1 or connections < 1:
            raise ValueError(f"threads and connections must be >= 1, got {threads} and {connections}")
        if mode == "gevent" and importlib.util.find_spec("gevent") is None:
            raise RuntimeError("serve(mode='gevent') needs gevent: pip install 'smcp_sync[gevent]'")
        self._build = build
        self._served: Served | None = None
        # gunicorn's default (1,000) capped gthread below `threads`. Past `threads`, gthread
        # keeps polling clients alive between requests, and new connections wait for a thread.
        worker_connections = KEEPALIVE_FACTOR * threads if mode == "threads" else connections
        self._options = {
            "bind": [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"],
            "workers": 1,
            "worker_class": WORKER_CLASSES[mode],
            "threads": threads,
            "worker_connections": worker_connections,
            "graceful_timeout": GRACEFUL_TIMEOUT,
            # gevent: the whole head of each request within it, in whole seconds
            # (`gevent_worker`); gthread keeps its default (how long a kept-alive
            # connection waits without a thread)
            **({"keepalive": math.ceil(header_timeout)} if mode == "gevent" else {}),
            "post_fork": _stop_at_once_while_booting,
            # mode "threads": its websockets leave gunicorn's count for the reactor's
            "post_worker_init": lambda worker: self._init_worker(worker, worker_connections + (connections if mode == "threads" else 0)),
            "when_ready": lambda arbiter: on_ready and on_ready(str(arbiter.LISTENERS[0])),
            # gunicorn >= 24 opens a control socket under ~/.gunicorn by default: an
            # embedded server should create no files and no extra management interface.
            "control_socket_disable": True,
            # gunicorn drops header names with an underscore by default, and with them the
            # key of official 0.1.x clients (`access_token`, `auth.UNDERSCORE_KEY_HEADERS`).
            # "dangerous" maps `a_b` like `a-b`; what it guards against is an app trusting a
            # proxy-set header that a client shadows. The only app served here is the
            # Socket.IO Server: its limits use REMOTE_ADDR, and the one forwarded header it
            # reads (X-Forwarded-Host/Proto, for the same-origin CORS default) is one a
            # browser page cannot set, so a shadowed one opens nothing.
            "header_map": "dangerous",
            "loglevel": "info" if logger.isEnabledFor(logging.INFO) else "warning",
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings:  # settings newer than the installed gunicorn are skipped
                self.cfg.set(key, value)

    def load(self) -> Any:
        """In the worker, after its worker class has set up (gevent: patched)."""
        self._served = self._build()
        return self._served.wsgi_app

    def _init_worker(self, worker: Any, connections: int) -> None:
        assert self._served is not None  # `load()` ran first: gunicorn loads, then calls post_worker_init
        worker.request_deadlines = self._served.request_deadlines
        _allow_open_files(connections + SPARE_FILES)
        gc.set_threshold(*GC_THRESHOLDS)  # the worker process is the Server's alone
        _drop_connections_on_stop_signals(self._served.drop_connections, worker.run_soon)

    def serve(self) -> None:
        """Run until a signal stops gunicorn; returns normally on a clean stop, raises
        KeyboardInterrupt after a clean stop on SIGINT. Only in this process: the worker,
        forked inside `arbiter.run()`, leaves it by SystemExit, which goes on up there
        (returning would run the caller's code after `serve()` once more, in the worker)."""
        arbiter = _Arbiter(self)
        master = os.getpid()
        try:
            arbiter.run()
        except SystemExit as exc:
            if exc.code not in (0, None) or os.getpid() != master:
                raise
        if arbiter.interrupted:
            raise KeyboardInterrupt


class _Arbiter(Arbiter):
    """gunicorn's master, remembering a SIGINT (it exits 0 on every stop signal)."""

    interrupted = False

    def handle_int(self) -> None:
        self.interrupted = True
        super().handle_int()


class _BoundedThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, cutting a connection whose request head is not read
    within the header timeout. Overrides `handle(conn)` (runs in a worker thread, reads
    the head, then calls `handle_request(req, conn)`), same shape in gunicorn 22 to 27.
    `request_deadlines` is set in the worker process before it serves (`_init_worker`)."""

    request_deadlines: RequestDeadlines

    @staticmethod
    def run_soon(fn: Callable[[], Any]) -> None:
        """Run `fn` from a signal handler: at once, on the thread the signal interrupted."""
        fn()

    def handle(self, conn: Any) -> Any:
        conn.smcp_head_deadline = self.request_deadlines.reading_head(conn.sock, conn.client)
        try:
            return super().handle(conn)
        finally:
            conn.smcp_head_deadline.cancel()

    def handle_request(self, req: Any, conn: Any) -> Any:
        """gunicorn's; a websocket handed over to the reactor (`HandedOver`) leaves the
        connection: gunicorn closes it after the request (gunicorn 27 shuts its writing
        side first), and must close nothing the reactor reads."""
        self.request_deadlines.head_read(conn.sock, conn.smcp_head_deadline)
        try:
            return super().handle_request(req, conn)
        except HandedOver:
            conn.sock = _LetGo()
            raise StopIteration() from None


class _LetGo:
    """What a gthread connection holds in place of a socket the reactor took: closing it
    (gunicorn 22-26 `close`, 27 `setblocking` then `shutdown` for a graceful close, which
    gives up on an OSError) does nothing."""

    def setblocking(self, flag: bool) -> None:
        pass

    def shutdown(self, how: int) -> None:
        raise OSError("handed over to the reactor")

    def close(self) -> None:
        pass


def _allow_open_files(needed: int) -> None:
    """Raise the worker's soft limit on open files to `needed` (within the hard limit):
    each connection holds one, and the usual soft limit (1,024) is below the caps."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < needed:
        logger.warning("open files limited to %d (hard limit): fewer connections than the %d asked for", wanted, needed)


#: The signals gunicorn's master stops its workers with.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def _stop_at_once_while_booting(arbiter: Any, worker: Any) -> None:
    """In a worker just forked: a stop signal ends it at once until gunicorn's own handlers
    are set (the worker's `init_signals`, after the gevent worker has patched the standard
    library). Inherited from the master, the handlers would only queue the signal for the
    master's loop, which never runs in the worker: the worker would boot and serve, and the
    master wait out its graceful timeout before killing it."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_while_booting)


def _exit_while_booting(signum: int, frame: Any) -> None:
    """Nothing is loaded yet, so nothing to finish: exit 0, which the master takes as a
    worker that stopped (SIGQUIT's default action would dump core, and a worker killed by
    a signal is logged as a fault)."""
    os._exit(0)


def _drop_connections_on_stop_signals(drop_connections: Callable[[], None], run_soon: Callable[[Callable[[], Any]], Any]) -> None:
    """In the worker: before gunicorn's own handler, drop the Socket.IO connections
    (through `run_soon`: the gevent worker runs it in a greenlet of its own, as gunicorn
    does its own blocking signal work).

    Otherwise each open websocket keeps a worker thread busy: SIGTERM would wait out the
    grace period, and SIGINT/SIGQUIT would hang in the interpreter's exit, which joins
    the thread pool, until the master kills the worker. Dropping is a few in-memory
    operations per connection, so it runs right in the handler.
    """

    def drop() -> None:
        try:
            drop_connections()
        except Exception:
            logger.exception("dropping connections at shutdown failed")

    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)

        def on_signal(received: int, frame: Any, previous: Any = previous) -> None:
            run_soon(drop)
            if callable(previous):
                previous(received, frame)

        signal.signal(signum, on_signal)
