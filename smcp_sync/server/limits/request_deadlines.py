"""Deadlines for reading HTTP requests, for the WSGI servers `start()` and `serve()` run.

Why: neither werkzeug nor gunicorn's gthread worker bounds how long a client may take to
send a request line and headers: a connection that sends half a request line holds a
worker thread for as long as it stays open (issue 12), and enough of them lock every
other client out. Here a connection whose request head is not complete within
`header_timeout` is cut (both directions shut down, so the blocked read returns), and
once the head is read each further read or write blocks at most `read_timeout`. A
websocket upgrade then sets its own idle timeout (`engine.py`).
"""

from __future__ import annotations

import logging
import socket
import time

from ...threads.deadlines import Deadline, Deadlines

logger = logging.getLogger(__name__)


class RequestDeadlines:
    def __init__(self, header_timeout: float, read_timeout: float) -> None:
        self.header_timeout = header_timeout
        self.read_timeout = read_timeout
        self._deadlines = Deadlines("smcp-http-deadlines")

    def reading_head(self, sock: socket.socket, peer: object) -> Deadline:
        """The request head is being read from `sock`; cut it unless `head_read` comes
        first (cancel the returned deadline when the request ends some other way)."""
        return self._deadlines.call_at(time.monotonic() + self.header_timeout, lambda: self._cut(sock, peer))

    def head_read(self, sock: socket.socket, deadline: Deadline) -> None:
        """The head is complete: no deadline, bounded reads and writes from here on."""
        deadline.cancel()
        try:
            sock.settimeout(self.read_timeout)
        except OSError:  # closed meanwhile
            pass

    def shutdown(self) -> None:
        self._deadlines.shutdown()

    def _cut(self, sock: socket.socket, peer: object) -> None:
        logger.info("closed the connection from %s: no complete request head within %.1f s", peer, self.header_timeout)
        shutdown_socket(sock)


def shutdown_socket(sock: socket.socket) -> None:
    """Shut both directions: a thread blocked reading or writing `sock` returns at once."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already, or never connected
        pass
