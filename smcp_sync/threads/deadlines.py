"""Functions called at deadlines, all on one thread.

Why: a forwarded request must time out (408) if its Computer never answers, but blocking
a handler thread per request just to watch the clock costs a thread and a wake-up per
call (benchmarks/README.md, Findings 5). One thread sleeps until the earliest deadline
instead. It starts with the first deadline, ends after `idle_timeout` without any, and
`shutdown()` stops it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Any, Callable

from .forks import after_fork_in_child

logger = logging.getLogger(__name__)

#: Cancelled entries are dropped from the heap once they are this many and half of it.
_COMPACT_AT = 512


class Deadline:
    """One scheduled call; `cancel()` before it is due means it never happens."""

    __slots__ = ("when", "seq", "action", "_owner")

    def __init__(self, when: float, seq: int, action: Callable[[], Any], owner: Deadlines):
        self.when = when
        self.seq = seq
        self.action: Callable[[], Any] | None = action
        self._owner = owner

    def __lt__(self, other: Deadline) -> bool:
        return (self.when, self.seq) < (other.when, other.seq)

    def cancel(self) -> None:
        self._owner._cancel(self)


class Deadlines:
    def __init__(self, name: str = "smcp-deadlines", *, idle_timeout: float = 30.0):
        self._name = name
        self._idle_timeout = idle_timeout
        self._changed = threading.Condition()
        self._heap: list[Deadline] = []
        self._cancelled = 0
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopping = False
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`forks`): the thread is the parent's, and so is every
        deadline to come (it acts on the parent's requests and sockets): none fires here."""
        self._changed = threading.Condition()
        self._heap, self._cancelled, self._thread, self._stopping = [], 0, None, False

    def call_at(self, when: float, action: Callable[[], Any]) -> Deadline:
        """Call `action()` (on this object's thread) at `time.monotonic()` == `when`."""
        with self._changed:
            deadline = Deadline(when, next(self._seq), action, self)
            heapq.heappush(self._heap, deadline)
            if self._heap[0] is deadline:
                self._changed.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        return deadline

    def __len__(self) -> int:
        """Deadlines still to come."""
        with self._changed:
            return len(self._heap) - self._cancelled

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the thread; deadlines still to come stay, and the next `call_at` starts a
        thread for them again."""
        with self._changed:
            thread, self._stopping = self._thread, True
            self._changed.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._changed:
            self._stopping = False

    def _cancel(self, deadline: Deadline) -> None:
        with self._changed:
            if deadline.action is None:
                return
            deadline.action = None
            self._cancelled += 1
            if self._cancelled >= _COMPACT_AT and self._cancelled * 2 >= len(self._heap):
                self._heap = [d for d in self._heap if d.action is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        with self._changed:
            try:
                while not self._stopping:
                    due = self._next_due()
                    if due is None:
                        if not self._heap and not self._changed.wait(self._idle_timeout) and not self._heap:
                            return
                        continue
                    self._changed.release()
                    try:
                        due()
                    except Exception:
                        logger.exception("deadline action %r failed", due)
                    finally:
                        self._changed.acquire()
            finally:
                self._thread = None

    def _next_due(self) -> Callable[[], Any] | None:
        """Pop and return the action that is due; otherwise wait until the earliest one
        (lock held, released while waiting) and return None."""
        while self._heap and self._heap[0].action is None:
            heapq.heappop(self._heap)
            self._cancelled -= 1
        if not self._heap:
            return None
        wait = self._heap[0].when - time.monotonic()
        if wait > 0:
            self._changed.wait(wait)
            return None
        deadline = heapq.heappop(self._heap)
        action, deadline.action = deadline.action, None
        return action
