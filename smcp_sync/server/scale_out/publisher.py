"""One thread that publishes a node's Socket.IO messages to Redis, in order, so that no
other thread waits on Redis to emit: a Computer's answer to a call from another node
is published from the thread that read it off the Computer's socket, and a Redis that
hangs (SIGSTOP, a full network buffer) would stall that socket's every message and
the handlers behind it (docs/server/scale-out.md).

What waits is bounded: at most `capacity` messages (the oldest are dropped past it,
with a warning: a call whose answer is dropped ends in its 408 at the caller's node).
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable

logger = logging.getLogger(__name__)

#: Messages waiting to be published at most.
DEFAULT_CAPACITY = 10_000


class Publisher:
    def __init__(self, send: Callable[[Any], None], *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._send = send
        self._capacity = capacity
        self._queue: collections.deque[Any] = collections.deque()
        self._changed = threading.Condition()
        self._closing = False
        self._dropped = 0
        self._thread: threading.Thread | None = None

    def submit(self, message: Any) -> None:
        """Queue `message`; it is sent after every message submitted before it."""
        with self._changed:
            if self._closing:
                return
            if len(self._queue) >= self._capacity:
                self._queue.popleft()
                self._dropped += 1
                if self._dropped == 1 or self._dropped % 1000 == 0:
                    logger.warning("Redis publisher: %d messages dropped (%d waiting: Redis is slow or down)", self._dropped, self._capacity)
            self._queue.append(message)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="smcp-redis-publisher", daemon=True)
                self._thread.start()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._queue or self._closing)
                if not self._queue:
                    return
                message = self._queue.popleft()
            try:
                self._send(message)
            except Exception:
                logger.exception("Redis publisher: sending a message failed")

    def close(self, timeout: float) -> bool:
        """Send what is queued (within `timeout`), then end the thread; False if it is
        still running (Redis hangs: the rest is dropped)."""
        with self._changed:
            self._closing = True
            self._changed.notify()
            thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            with self._changed:
                self._queue.clear()
            return False
        return True
