"""`SerialThread`: one thread that runs submitted work in submission order; `Batches`
on top of it hands items that arrive together to one call.

Why: some work must not run on the thread that produced it (a Socket.IO reader, the
Computer's asyncio loop), because it may block or call back into the object waiting on
that thread; it must not run concurrently with itself, and it must keep its order. The
Agent's notification callbacks and the Computer's MCP server events are such work. One
worker thread with a FIFO gives all three; `Batches` lets a burst of changes cost one
refresh instead of one each.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable, Generic, TypeVar

from .forks import after_fork_in_child
from .thread_stop import join_stopped

log = logging.getLogger(__name__)

T = TypeVar("T")

_STOP = object()


class SerialThread:
    """Runs `submit`ted work on one thread named `name`, in order; a failure is logged
    and the next item runs. Started by `start()`, again after `stop()`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._dropping = threading.Event()
        self._thread: threading.Thread | None = None
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`forks`): the thread and its queue are the parent's; stopped
        here until `start()`."""
        self._lock = threading.Lock()
        self._queue, self._dropping, self._thread = queue.SimpleQueue(), threading.Event(), None

    @property
    def running(self) -> bool:
        with self._lock:
            return self._thread is not None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._queue, self._dropping = queue.SimpleQueue(), threading.Event()
                run = (self._queue, self._dropping)
                self._thread = threading.Thread(target=self._run, args=run, name=self.name, daemon=True)
                self._thread.start()

    def submit(self, work: Callable[..., Any], *args: Any) -> bool:
        """Queue `work(*args)`; never blocks. False (and nothing queued) when stopped."""
        with self._lock:
            if self._thread is None:
                return False
            self._queue.put((work, args))
            return True

    def stop(self, timeout: float, *, finish_queued: bool = False) -> None:
        """End the thread once the running item is done (waiting up to `timeout`), after
        what is already queued when `finish_queued`, else dropping it. Safe from inside a
        work item: the thread then ends when that item returns."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            if not finish_queued:
                self._dropping.set()
            self._queue.put(_STOP)
        join_stopped(thread, timeout, "serial thread")

    def _run(self, work_queue: queue.SimpleQueue[Any], dropping: threading.Event) -> None:
        while True:
            item = work_queue.get()
            if item is _STOP or dropping.is_set():
                return
            work, args = item
            try:
                work(*args)
            except Exception:
                log.exception("%s: %r failed", self.name, work)


class Batches(Generic[T]):
    """Items `post`ed from any thread, handed to `handler` on `thread` as lists: all the
    items that came while the previous list was being handled go in the next one."""

    def __init__(self, thread: SerialThread, handler: Callable[[list[T]], None]) -> None:
        self._thread = thread
        self._handler = handler
        self._lock = threading.Lock()
        self._pending: list[T] = []
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`forks`): what was posted is the parent's to handle."""
        self._lock, self._pending = threading.Lock(), []

    def post(self, item: T) -> None:
        """Thread-safe and never blocks (callable from an event loop); dropped once the
        thread is stopped."""
        with self._lock:
            self._pending.append(item)
            first = len(self._pending) == 1
        if first and not self._thread.submit(self._hand_over):
            with self._lock:
                self._pending.clear()

    def _hand_over(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self._handler(batch)
