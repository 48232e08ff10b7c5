"""An elastic, bounded pool of reusable threads for Socket.IO message handlers.

Why: in threading mode python-socketio starts a new OS thread for every incoming message
(server events, client messages and acks); on a loaded machine a new thread is scheduled
late, which doubled a tool call's latency (benchmarks/README.md, Findings 1). Reusing an
idle thread removes that cost.

Why elastic, never queueing: handlers block for long (a Computer's tool call lasts as
long as the tool, a routed Server handler waits for the Computer's answer) and a cancel
notice must still run at once. So `submit` hands the job to an idle worker when one is
waiting and otherwise starts a new one; idle workers exit after `idle_timeout`, and at
most `max_idle` stay parked.

Why bounded: a client (or a hung Redis behind every handler) could otherwise make the pool
start a thread per message, hundreds of them. At most `max_workers` threads run; past
that a job waits in a FIFO queue of at most `max_queued` (a worker that finishes takes
the oldest before parking), and past that `submit` refuses it: it returns False and the
caller answers with a coded refusal (docs/server/deployment.md, *What scales how*). Jobs never
block the submitter: the submitter is a socket's reader thread.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from typing import Any, Callable

from .forks import after_fork_in_child

logger = logging.getLogger(__name__)

_Job = tuple[Callable[..., Any], tuple[Any, ...]]

#: Threads a pool runs at most, and jobs waiting for one at most, unless told otherwise.
DEFAULT_MAX_WORKERS = 256
DEFAULT_MAX_QUEUED = 4096


class _Worker:
    """One pool thread's hand-over slot: `job` is set (under the pool lock) before
    `wake` is set, so a worker that wakes by timeout still sees work given to it."""

    def __init__(self, job: _Job):
        self.job: _Job | None = job
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None


class WorkerPool:
    """`submit(fn, *args)` runs `fn(*args)` on a pooled thread at once, or queued while
    `max_workers` are busy."""

    _ids = itertools.count(1)

    def __init__(
        self,
        name: str = "smcp-worker",
        *,
        max_idle: int = 32,
        idle_timeout: float = 30.0,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_queued: int = DEFAULT_MAX_QUEUED,
    ):
        if max_workers < 1 or max_queued < 0:
            raise ValueError(f"max_workers must be >= 1 and max_queued >= 0, not {max_workers} and {max_queued}")
        self._name = name
        self._max_idle = max_idle
        self._idle_timeout = idle_timeout
        self.max_workers = max_workers
        self.max_queued = max_queued
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # a stack: the most recently parked worker is reused first
        self._live: set[threading.Thread] = set()
        self._queued: collections.deque[_Job] = collections.deque()
        self._refused = 0
        self._closed = False
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`forks`): the workers are the parent's, and so are the jobs
        queued for them; the next `submit` starts a worker of the child's own."""
        self._lock = threading.Lock()
        self._idle, self._live, self._queued = [], set(), collections.deque()

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run `fn(*args)` on an idle worker, a new one, or the first one free. Returns
        False (and drops the job) once the pool is shut down (its owner is closing the
        connection) or full: `max_workers` busy and `max_queued` waiting (logged)."""
        with self._lock:
            if self._closed:
                logger.debug("%s pool is shut down: dropped %r", self._name, fn)
                return False
            if self._idle:
                worker = self._idle.pop()
                worker.job = (fn, args)
                worker.wake.set()
                return True
            if len(self._live) >= self.max_workers:
                return self._enqueue((fn, args))
            worker = _Worker((fn, args))
            worker.thread = threading.Thread(
                target=self._work, args=(worker,), name=f"{self._name}-{next(self._ids)}", daemon=True
            )
            # started before the lock is let go: a `shutdown` that lists it must be able to join it
            worker.thread.start()
            self._live.add(worker.thread)
        return True

    def _enqueue(self, job: _Job) -> bool:
        """Queue `job` for the first worker free, or refuse it; the caller holds the lock."""
        if len(self._queued) < self.max_queued:
            self._queued.append(job)
            return True
        self._refused += 1
        if self._refused == 1 or self._refused % 1000 == 0:
            logger.warning(
                "%s pool is full (%d workers busy, %d jobs waiting): refused %d jobs so far",
                self._name,
                self.max_workers,
                self.max_queued,
                self._refused,
            )
        return False

    def _work(self, worker: _Worker) -> None:
        try:
            while True:
                assert worker.job is not None
                fn, args = worker.job
                worker.job = None
                try:
                    fn(*args)
                except Exception:
                    logger.exception("%s job %r failed", self._name, fn)
                if not self._park(worker):
                    return
                worker.wake.wait(self._idle_timeout)
                if not self._resume(worker):
                    return
        finally:
            with self._lock:
                self._live.discard(threading.current_thread())

    def _park(self, worker: _Worker) -> bool:
        """Take the oldest queued job, or become idle, unless the pool is closing or already
        keeps enough idle workers."""
        with self._lock:
            if self._queued:
                worker.job = self._queued.popleft()
                worker.wake.set()  # `_resume` finds the job at once
                return True
            if self._closed or len(self._idle) >= self._max_idle:
                self._live.discard(threading.current_thread())  # under this lock: a submit then starts a new one
                return False
            worker.wake.clear()
            self._idle.append(worker)
            return True

    def _resume(self, worker: _Worker) -> bool:
        """After a wake-up or an idle timeout: True if a job was handed over meanwhile."""
        with self._lock:
            if worker.job is None and self._queued:  # queued while this one was leaving the idle stack
                worker.job = self._queued.popleft()
            if worker.job is not None:
                return True
            if worker in self._idle:
                self._idle.remove(worker)
            self._live.discard(threading.current_thread())
            return False

    @property
    def thread_count(self) -> int:
        """Live worker threads, busy or idle."""
        with self._lock:
            return len(self._live)

    @property
    def queued_count(self) -> int:
        """Jobs waiting for a worker."""
        with self._lock:
            return len(self._queued)

    @property
    def idle_count(self) -> int:
        """Workers parked waiting for a job."""
        with self._lock:
            return len(self._idle)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop accepting work, wake idle workers and wait up to `timeout` for every
        worker (busy ones finish their job first). Returns True if all have ended.
        Jobs still queued run before their workers end. Idempotent; callable from a
        worker (which does not wait for itself)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            for worker in self._idle:
                worker.wake.set()
            self._idle.clear()
            threads = list(self._live)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive() and t is not current]
        if stuck:
            logger.warning("%s pool: %d workers still busy after %.1fs: %s", self._name, len(stuck), timeout, stuck)
        return not stuck
