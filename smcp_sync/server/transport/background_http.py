"""`SMCPServer.start()`'s HTTP side: werkzeug's threaded WSGI server in a background thread.

werkzeug is the server that can both run inside a thread of another program (a test, a
notebook, the demo) and hand the raw socket to simple-websocket for the websocket
upgrade in threading mode (docs/ARCHITECTURE.md, Library facts). Its stock version neither remembers its
per-connection threads nor logs through our logger, so this one does both: `stop()` can
then join every thread it started, with a deadline.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from ..auth import UNDERSCORE_KEY_HEADERS
from ..limits.limits import DEFAULT_HEADER_TIMEOUT, DEFAULT_READ_TIMEOUT
from ..limits.request_deadlines import RequestDeadlines, shutdown_socket

logger = logging.getLogger(__name__)

_LOG_LEVELS = {"error": logging.WARNING, "warning": logging.WARNING, "info": logging.DEBUG}


class _RequestHandler(WSGIRequestHandler):
    """Request lines go to our logger at DEBUG instead of werkzeug's stderr handler, and
    reading a request is bounded (werkzeug has no read timeout: a half-sent request
    held its thread for as long as the client kept the connection open)."""

    server: _TrackingWSGIServer

    def handle_one_request(self) -> None:
        """Also waits for the next request of a kept-alive connection: bounded too."""
        self._head_deadline = self.server.request_deadlines.reading_head(self.connection, self.client_address)
        try:
            super().handle_one_request()
        finally:
            self._head_deadline.cancel()

    def run_wsgi(self) -> None:
        self.server.request_deadlines.head_read(self.connection, self._head_deadline)
        super().run_wsgi()

    def make_environ(self) -> dict[str, Any]:
        """werkzeug's, keeping the key headers it drops for the underscore in their names
        (`access_token`, the official 0.1.x clients' default auth). Only where no dashed
        header (`access-token`) gave that WSGI name already: nothing is merged."""
        environ = super().make_environ()
        for name in UNDERSCORE_KEY_HEADERS:
            value = self.headers.get(name)
            key = "HTTP_" + name.upper()
            if value is not None and key not in environ:
                environ[key] = value
        return environ

    def connection_dropped(self, error: BaseException, environ: Any = None) -> None:
        # Engine.IO ends a websocket by raising ConnectionError (its werkzeug mode). Close
        # the TCP connection then: otherwise werkzeug keeps it alive, reads the client's
        # websocket close frame as an HTTP request, and the client waits ~3 s for a reply.
        self.close_connection = True

    def log(self, type: str, message: str, *args: Any) -> None:
        logger.log(_LOG_LEVELS.get(type, logging.DEBUG), "%s " + message, self.address_string(), *args)


class _TrackingWSGIServer(ThreadedWSGIServer):
    def __init__(self, host: str, port: int, app: Any, request_deadlines: RequestDeadlines) -> None:
        self.request_deadlines = request_deadlines
        # Bind here: on a busy port werkzeug would print to stderr and `sys.exit(1)`;
        # `create_server` raises a plain OSError the caller can handle.
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.create_server((host, port), family=family) as listening:
            super().__init__(host, port, app, handler=_RequestHandler, fd=listening.fileno())
        self._connections_lock = threading.Lock()
        self._connections: dict[threading.Thread, socket.socket] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"smcp-http-{client_address[1]}",
            daemon=True,
        )
        with self._connections_lock:
            self._connections = {t: s for t, s in self._connections.items() if t.is_alive()}
            self._connections[thread] = request
        thread.start()

    def connections(self) -> dict[threading.Thread, socket.socket]:
        with self._connections_lock:
            return dict(self._connections)


class BackgroundHTTPServer:
    """Serve `app` on (host, port) from a background thread until `stop()`."""

    def __init__(self, app: Any, host: str, port: int, request_deadlines: RequestDeadlines | None = None) -> None:
        if request_deadlines is None:
            request_deadlines = RequestDeadlines(DEFAULT_HEADER_TIMEOUT, DEFAULT_READ_TIMEOUT)
        self._server = _TrackingWSGIServer(host, port, app, request_deadlines)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="smcp-http-accept", daemon=True
        )

    @property
    def url(self) -> str:
        address, port = self._server.server_address[:2]
        host = str(address)  # an AF_INET(6) server's address: a str already
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop_accepting(self, timeout: float) -> None:
        """Stop taking new connections (existing ones keep being served)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout)

    def join_connections(self, timeout: float) -> list[str]:
        """Wait for the connection threads; after half the time, cut the sockets of those
        still open (idle keep-alive connections). Returns the names of threads that
        outlived `timeout`."""
        deadline = time.monotonic() + timeout
        cut_at = time.monotonic() + timeout / 2
        for thread in self._server.connections():
            thread.join(max(0.0, cut_at - time.monotonic()))
        for thread, sock in self._server.connections().items():
            if thread.is_alive():
                shutdown_socket(sock)
        for thread in self._server.connections():
            thread.join(max(0.0, deadline - time.monotonic()))
        self._server.server_close()
        self._server.request_deadlines.shutdown()
        return [t.name for t in self._server.connections() if t.is_alive()]

