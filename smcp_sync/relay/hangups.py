"""`HangupWatch`: tells the relay when a worker closes a socket while its call is running.

Why: a relay thread that forwards a worker's tool call waits for the Server's answer and
reads nothing from the worker meanwhile, so it would not see the worker die (SIGKILL, a
worker timeout, an interrupt that abandons the socket). A worker never writes on a
socket whose request is unanswered (one request at a time per socket: `link`), so that
socket turning readable means it was closed; the relay then cancels the call
(`server:tool_call_cancel`). One thread waits on every watched socket at once (epoll or
kqueue see a socket registered while they wait); a call costs two registrations.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
from typing import Any, Callable

from ..threads.thread_stop import join_stopped

logger = logging.getLogger(__name__)

#: Seconds the watch's thread sleeps at most between looks (a stop ends it at once).
_LOOK_INTERVAL = 1.0


class HangupWatch:
    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = os.pipe()
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="smcp-relay-hangups", daemon=True)
        self._thread.start()

    def watch(self, fileno: int, on_hangup: Callable[[], Any]) -> None:
        """Call `on_hangup()` (once, on the watch's thread: it must not block) if `fileno`
        turns readable before `unwatch(fileno)`."""
        self._selector.register(fileno, selectors.EVENT_READ, on_hangup)

    def unwatch(self, fileno: int) -> None:
        try:
            self._selector.unregister(fileno)
        except (KeyError, ValueError):
            pass  # already reported (and unregistered) by the watch's thread

    def close(self, timeout: float) -> None:
        self._stopping = True
        os.write(self._wake_write, b"x")
        join_stopped(self._thread, timeout, "hangup watch")
        self._selector.close()
        os.close(self._wake_read)
        os.close(self._wake_write)

    def _run(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(_LOOK_INTERVAL):
                if key.data is None:
                    continue  # the stop's wake-up
                self.unwatch(key.fd)
                try:
                    key.data()
                except Exception:
                    logger.exception("hangup handler %r failed", key.data)
