"""python-socketio's Socket.IO Admin UI (`Server.instrument()`) on the `/admin`
namespace, behind a user and password (`options.AdminUI`).

Always instrumented in python-socketio's "production" mode: "development" would show
every event's payload (tool arguments among them) and each client's handshake headers
(API keys among them) to the UI, and replaces Engine.IO's ping method, which `engine`
sends from its deadline thread. `instrument()` patches Engine.IO's socket class for the
whole process, and cannot be stacked (a second one's patches call themselves): one
Server per process has the Admin UI at a time; `close()` undoes it.
"""

from __future__ import annotations

import hmac
import threading
from typing import Any

from .options import AdminUI

ADMIN_NAMESPACE = "/admin"

_process = threading.Lock()  # held while a Server of this process is instrumented


class AdminInstrumentation:
    def __init__(self, sio: Any, options: AdminUI) -> None:
        if not _process.acquire(blocking=False):
            raise RuntimeError("another SMCPServer of this process has the Admin UI: stop it first (one per process)")
        self._options = options
        self._closed = False
        self._instrumented = sio.instrument(
            auth=self._allowed, mode="production", read_only=options.read_only, namespace=ADMIN_NAMESPACE
        )

    def _allowed(self, auth: Any) -> bool:
        """The UI's login, compared in constant time."""
        if not isinstance(auth, dict):
            return False
        username, password = auth.get("username"), auth.get("password")
        if not (isinstance(username, str) and isinstance(password, str)):
            return False
        same_user = hmac.compare_digest(username.encode(), self._options.username.encode())
        same_password = hmac.compare_digest(password.encode(), self._options.password.encode())
        return same_user and same_password

    def stopping(self) -> None:
        """Tell the stats task to end (before the Server's sleeps end for good)."""
        event = self._instrumented.stop_stats_event
        if event is not None:
            event.set()

    def close(self, timeout: float) -> None:
        """Join the stats task and undo the instrumentation (once)."""
        if self._closed:
            return
        self._closed = True
        self.stopping()
        task, self._instrumented.stats_task = self._instrumented.stats_task, None
        if task is not None:
            task.join(timeout)  # a thread, or a greenlet under gevent
        self._instrumented.uninstrument()
        _process.release()
