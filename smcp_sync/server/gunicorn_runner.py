"""`SMCPServer.serve()`: the Server under gunicorn with the `gthread` worker.

Why gunicorn/gthread: among the WSGI servers that can hand the raw socket to
simple-websocket (needed for the websocket upgrade in threading mode), it is the one
built for production — a supervising master, worker restarts, signal handling — and it
closes client connections promptly (docs/ARCHITECTURE.md, Library facts). Waitress and cheroot cannot upgrade;
werkzeug is a development server.

Reading a request is bounded (`request_deadlines`): gthread waits a few seconds for a
connection's first bytes without a thread, but a request line sent half-way holds a
worker thread for as long as the client keeps the connection open.

Exactly one worker process: sessions, offices and pending calls live in that process
(several processes need a shared registry and a message queue). Each open connection
occupies one worker thread, so `threads` caps concurrent connections.

Shutdown: Ctrl-C (SIGINT), SIGQUIT and SIGTERM all end within about a second: the worker
first drops every Socket.IO connection. Clients see a lost transport, not a
server-initiated disconnect, so they reconnect once a Server is back (a restart keeps
Computers and Agents coming back). After a clean stop on Ctrl-C, `serve()` raises
KeyboardInterrupt, as Python's own servers do, so callers (the CLI: exit 130) can tell it
from SIGTERM, which returns normally.

gunicorn's own log lines (starting, booting worker...) follow this module's logger: at
INFO and below when smcp_sync logs INFO, otherwise warnings and errors only.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any, Callable

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.workers.gthread import ThreadWorker

from .request_deadlines import RequestDeadlines

logger = logging.getLogger(__name__)


class GunicornServer(BaseApplication):
    def __init__(
        self,
        app: Any,
        *,
        host: str,
        port: int,
        threads: int,
        drop_connections: Callable[[], None],
        request_deadlines: RequestDeadlines,
        on_ready: Callable[[str], Any] | None = None,
    ) -> None:
        self._app = app
        self._options = {
            "bind": [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"],
            "workers": 1,
            # a dotted path: gunicorn 22 takes no class object here
            "worker_class": f"{__name__}.{_BoundedThreadWorker.__name__}",
            "threads": threads,
            "graceful_timeout": 10,
            "post_worker_init": lambda worker: _init_worker(worker, request_deadlines, drop_connections),
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
        return self._app

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

    def handle(self, conn: Any) -> Any:
        conn.smcp_head_deadline = self.request_deadlines.reading_head(conn.sock, conn.client)
        try:
            return super().handle(conn)
        finally:
            conn.smcp_head_deadline.cancel()

    def handle_request(self, req: Any, conn: Any) -> Any:
        self.request_deadlines.head_read(conn.sock, conn.smcp_head_deadline)
        return super().handle_request(req, conn)


def _init_worker(worker: Any, request_deadlines: RequestDeadlines, drop_connections: Callable[[], None]) -> None:
    worker.request_deadlines = request_deadlines
    _drop_connections_on_stop_signals(drop_connections)


def _drop_connections_on_stop_signals(drop_connections: Callable[[], None]) -> None:
    """In the worker: before gunicorn's own handler, drop the Socket.IO connections.

    Otherwise each open websocket keeps a worker thread busy: SIGTERM would wait out the
    grace period, and SIGINT/SIGQUIT would hang in the interpreter's exit, which joins
    the thread pool, until the master kills the worker. Dropping is a few in-memory
    operations per connection, so it runs right in the handler.
    """
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        previous = signal.getsignal(signum)

        def on_signal(received: int, frame: Any, previous: Any = previous) -> None:
            try:
                drop_connections()
            except Exception:
                logger.exception("dropping connections at shutdown failed")
            if callable(previous):
                previous(received, frame)

        signal.signal(signum, on_signal)
