"""`Refresher`: the Agent's own cache refreshes, off the dispatcher thread, one lane per peer.

Why: a refresh asks a Computer and may wait for its answer up to the refresh timeout. On
the dispatcher thread that wait held up every notification callback behind it, for
every Computer; one silent Computer stalled the whole Agent. Here each lane (a Computer,
or the office re-read) runs its refreshes on its own pooled thread, so a slow peer only
delays its own lane.

Bounded: at most one thread per lane, and work is coalesced. A request for a lane that
is already running is remembered as pending (by job name, so repeating a notice adds
nothing) and runs once when the current pass ends: the later notice gets an answer at
least as fresh as itself, without queueing one fetch per notice.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Hashable, Mapping

from ..threads.forks import after_fork_in_child
from ..threads.worker_pool import WorkerPool

logger = logging.getLogger(__name__)

Job = Callable[[], None]


class Refresher:
    def __init__(self, name: str):
        self._name = name
        self._lock = threading.Lock()
        self._pool: WorkerPool | None = None  # between start() and close()
        self._pending: dict[Hashable, dict[str, Job]] = {}  # lane -> jobs not started yet
        self._running: set[Hashable] = set()
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): the passes running and pending are the
        parent's (its pool forgets its threads by itself)."""
        self._lock, self._pending, self._running = threading.Lock(), {}, set()

    def start(self) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = WorkerPool(self._name, max_idle=2, idle_timeout=5.0)

    def request(self, lane: Hashable, jobs: Mapping[str, Job]) -> None:
        """Run `jobs` (in order) on `lane`'s thread: now if the lane is idle, else after
        its current pass, merged with what is already pending there."""
        if not jobs:
            return
        with self._lock:
            pool = self._pool
            if pool is None:
                return  # closed: the next start re-reads everything anyway
            self._pending.setdefault(lane, {}).update(jobs)
            if lane in self._running:
                return
            self._running.add(lane)
        if not pool.submit(self._run, lane):
            with self._lock:  # closed meanwhile: nothing will run it
                self._running.discard(lane)
                self._pending.pop(lane, None)

    def forget(self, lane: Hashable) -> None:
        """Drop `lane`'s pending jobs (the one running finishes)."""
        with self._lock:
            self._pending.pop(lane, None)

    def close(self, timeout: float) -> None:
        """Drop pending work and wait up to `timeout` for running passes to end.
        Idempotent; `start` makes it usable again."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._pending.clear()
        if pool is not None:
            pool.shutdown(timeout)

    def _run(self, lane: Hashable) -> None:
        while True:
            with self._lock:
                jobs = self._pending.pop(lane, None)
                if not jobs:
                    self._running.discard(lane)
                    return
            for name, job in jobs.items():
                try:
                    job()
                except Exception:
                    logger.exception("refresh %s of %r failed", name, lane)
