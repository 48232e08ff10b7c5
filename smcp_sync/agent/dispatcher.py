"""`Dispatcher`: one thread that runs submitted work in submission order.

Why: notification callbacks must never run on a Socket.IO thread (a callback that calls
the Agent would then wait for an answer that the same thread has to deliver), must not
run concurrently with each other, and must see notifications in the order they reached
the Agent. One worker thread with a FIFO gives all three.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

logger = logging.getLogger(__name__)

_STOP = object()


class Dispatcher:
    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        with self._lock:
            return self._thread is not None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._run, args=(self._queue,), name=self._name, daemon=True)
                self._thread.start()

    def submit(self, work: Callable[..., Any], *args: Any) -> bool:
        """Queue `work(*args)`; False (and nothing queued) when the dispatcher is stopped."""
        with self._lock:
            if self._thread is None:
                return False
            self._queue.put((work, args))
            return True

    def stop(self, timeout: float) -> None:
        """Drop queued work, let the running item finish (up to `timeout`), end the thread.
        Safe from inside a callback (the thread then ends after that callback)."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._queue.put(_STOP)
        if thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                logger.warning("%s: a callback is still running after %.1fs", self._name, timeout)

    def _run(self, work_queue: queue.SimpleQueue[Any]) -> None:
        while True:
            item = work_queue.get()
            if item is _STOP or self._queue is not work_queue or self._thread is None:
                return
            work, args = item
            try:
                work(*args)
            except Exception:
                logger.exception("%s: %r failed", self._name, work)
