"""One lane per MCP server for what its change notices ask of the resource channels:
listing the server again, retried with backoff until it succeeds or the server goes away.

Why a lane per server: a listing is a blocking MCP request (all pages of
`resources/list`), and a slow or stuck server must not hold up another's notices — nor
the Computer's event thread, which also serves tool-list refreshes and the
invalidations that make the Finder's read-your-writes promise true
(docs/computer/index.md, *The Desktop and Finder catalogue*). Why
retries: a notice is the only word that the URIs changed, so a listing that fails once
would otherwise leave the channels wrong until the next notice (issue: a new document
missing 15 s later). Requests for one server coalesce: a listing asked for while one is
queued is that one.

`settle(server, timeout)` waits until what was asked of a server's lane so far is done
(or is being retried after a failure and `timeout` runs out): a tool call's answer waits
on it so that what the server announced before answering is in force (`tools.calls`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ...threads.thread_stop import join_stopped

log = logging.getLogger(__name__)

#: Seconds before the first retry of a failed listing; doubled each time up to `RETRY_MAX`.
RETRY_FIRST = 0.2
RETRY_MAX = 5.0

#: ``sync(server, relist) -> done``: list `server` again (`relist`) or check that the
#: channels hold its current session's listing; False when it failed and must be retried.
Sync = Callable[[str, bool], bool]


def retry_delay(failures: int) -> float:
    """Seconds to wait after the `failures`-th failure in a row (1, 2, ...)."""
    return min(RETRY_FIRST * 2.0 ** (failures - 1), RETRY_MAX)


class _Lane:
    """A thread that runs one server's listings, one at a time."""

    def __init__(self, name: str, server: str, sync: Sync) -> None:
        self.server = server
        self._sync = sync
        self._changed = threading.Condition()
        self._asked: bool | None = None  # None: nothing asked; else whether to relist
        self._busy = False
        self._failures = 0
        self._retry_at: float | None = None
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name=f"{name}[{server}]", daemon=True)
        self.thread.start()

    def ask(self, relist: bool) -> None:
        with self._changed:
            if not self.stopped:
                self._asked = bool(self._asked) or relist
                self._changed.notify_all()

    def stop(self) -> None:
        with self._changed:
            self.stopped = True
            self._changed.notify_all()

    def settle(self, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(self._idle, timeout)

    def _idle(self) -> bool:
        return self.stopped or (self._asked is None and not self._busy and self._retry_at is None)

    def _run(self) -> None:
        while True:
            with self._changed:
                relist = self._next()
                if relist is None:
                    return
                self._busy = True
            try:
                done = self._sync(self.server, relist)
            except Exception:  # a bug must not end the lane: the next notice is still heard
                log.exception("listing the resources of MCP server %r failed", self.server)
                done = False
            with self._changed:
                self._busy = False
                self._failures = 0 if done else self._failures + 1
                self._retry_at = None if done else time.monotonic() + retry_delay(self._failures)
                if not done and not self.stopped:
                    log.info(
                        "MCP server %r: listing its resources again in %.1fs (failure %d)",
                        self.server, retry_delay(self._failures), self._failures,
                    )  # fmt: skip
                self._changed.notify_all()

    def _next(self) -> bool | None:
        """What to do next (whether to relist), waiting for it; None once stopped."""
        while not self.stopped:
            if self._asked is not None:
                relist, self._asked = self._asked or self._retry_at is not None, None
                self._retry_at = None
                return relist
            if self._retry_at is not None:
                wait = self._retry_at - time.monotonic()
                if wait <= 0:
                    self._retry_at = None
                    return True
                self._changed.wait(wait)
            else:
                self._changed.wait()
        return None


class RelistLanes:
    """The lanes of a Computer's MCP servers that serve resources."""

    def __init__(self, name: str, sync: Sync) -> None:
        self._name = f"smcp-relist[{name}]"
        self._sync = sync
        self._lock = threading.Lock()
        self._lanes: dict[str, _Lane] = {}
        self._halted = False

    def open(self, server: str) -> None:
        """Start `server`'s lane if it has none (the lanes of the servers listed at start
        start with the Computer, not at a random later moment)."""
        self._lane(server)

    def has(self, server: str) -> bool:
        with self._lock:
            return server in self._lanes

    def ask(self, server: str, relist: bool) -> None:
        """Have `server` listed again (`relist`), or its listing checked, on its lane."""
        lane = self._lane(server)
        if lane is not None:
            lane.ask(relist)

    def _lane(self, server: str) -> _Lane | None:
        with self._lock:
            if self._halted:
                return None
            lane = self._lanes.get(server)
            if lane is None:
                lane = self._lanes[server] = _Lane(self._name, server, self._sync)
            return lane

    def settle(self, server: str, timeout: float) -> bool:
        """Wait up to `timeout` until what was asked of `server`'s lane is done."""
        with self._lock:
            lane = self._lanes.get(server)
        return lane is None or lane.settle(timeout)

    def halt(self) -> None:
        """Nothing more is listed (the servers are about to stop)."""
        with self._lock:
            self._halted = True
            lanes = list(self._lanes.values())
        for lane in lanes:
            lane.stop()

    def stop(self, timeout: float) -> None:
        self.halt()
        with self._lock:
            lanes, self._lanes = list(self._lanes.values()), {}
        deadline = time.monotonic() + timeout
        for lane in lanes:
            join_stopped(lane.thread, max(0.0, deadline - time.monotonic()), "relisting thread")
