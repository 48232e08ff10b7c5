"""`serve(mode="gevent")`'s worker: gunicorn's gevent worker, with reads and writes
bounded as `_BoundedThreadWorker` bounds them for gthread (`request_deadlines.py`).

Reading a request head: the stock worker reads each head (the first one too) within
one `gevent.Timeout` of its `keepalive` setting, the whole head at once, and closes the
connection when it runs out; `serve()` sets `keepalive` to `header_timeout`. After the
head: the stock worker leaves the socket blocking, so a request body sent half-way
held its connection slot for as long as the client kept it open; here each read and
write blocks at most `read_timeout` (a websocket then sets its own idle timeout,
`engine.py`). Overrides `handle_request(listener_name, req, sock, addr)`, same shape in
gunicorn 22 to 27. Imported only in mode "gevent" (gevent is the `gevent` extra:
`gunicorn_runner` checks it is there first).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import gevent
from gevent.monkey import MonkeyPatchWarning
from gunicorn.workers.ggevent import GeventWorker

from ..limits.request_deadlines import RequestDeadlines


class BoundedGeventWorker(GeventWorker):
    request_deadlines: RequestDeadlines

    def patch(self) -> None:
        """gunicorn's, without gevent's warning that `ssl` was imported before the patch
        (always so here: the master imported the app, and with it urllib3 and redis).
        What imported names from `ssl` directly stays unpatched; the Server serves no
        TLS itself, and redis-py looks `ssl` up when it connects."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=MonkeyPatchWarning, message=".*ssl")
            super().patch()

    @staticmethod
    def run_soon(fn: Callable[[], Any]) -> None:
        """Run `fn` from a signal handler: in a greenlet of its own (the handler may run
        in gevent's hub, where nothing may block)."""
        gevent.spawn(fn)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        try:
            sock.settimeout(self.request_deadlines.read_timeout)
        except OSError:  # closed meanwhile
            pass
        return super().handle_request(listener_name, req, sock, addr)
