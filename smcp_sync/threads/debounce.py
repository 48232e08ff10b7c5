"""Coalesces bursts of changes into one announcement per burst.

Why: an MCP server may send hundreds of `resources/updated` in a second (a log window, a
document being saved in chunks); each would otherwise become a `server:update_*` and an
Agent refetch. A key fires `quiet` seconds after its last trigger, but no later than
`max_delay` after its first, so a steady stream still announces now and then. The
firing is scheduled on a `Deadlines` thread of the debouncer's own (started with the
first trigger, ended by `stop`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Generic, Hashable, TypeVar

from .deadlines import Deadline, Deadlines
from .forks import after_fork_in_child

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class Debouncer(Generic[K]):
    """Fires `fire(key)` for each triggered key (module doc)."""

    def __init__(self, name: str, fire: Callable[[K], None], quiet: float, max_delay: float) -> None:
        if quiet < 0 or max_delay < quiet:
            raise ValueError(f"need 0 <= quiet <= max_delay, got quiet={quiet!r}, max_delay={max_delay!r}")
        self._fire = fire
        self._quiet = quiet
        self._max_delay = max_delay
        self._deadlines = Deadlines(f"smcp-computer-debounce[{name}]")
        self._lock = threading.Lock()
        self._pending: dict[K, tuple[float, Deadline]] = {}  # key -> (first trigger, its firing)
        self._stopped = False
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`forks`): the firings pending are the parent's (its
        `Deadlines` drops them too)."""
        self._lock, self._pending = threading.Lock(), {}

    def trigger(self, key: K) -> None:
        """Thread-safe, never blocks for long; ignored once stopped."""
        now = time.monotonic()
        with self._lock:
            if self._stopped:
                return
            first, firing = self._pending.get(key, (now, None))
            if firing is not None:
                firing.cancel()
            when = min(now + self._quiet, first + self._max_delay)
            self._pending[key] = (first, self._deadlines.call_at(when, lambda: self._due(key, when)))

    def discard_pending(self) -> None:
        """Drop what is waiting to fire (its announcement has been made moot)."""
        with self._lock:
            self._drop_pending()

    def stop(self, timeout: float) -> None:
        """Stop without firing what is still pending (nobody is listening any more)."""
        with self._lock:
            self._stopped = True
            self._drop_pending()
        self._deadlines.shutdown(timeout)

    def _drop_pending(self) -> None:
        for _, firing in self._pending.values():
            firing.cancel()
        self._pending.clear()

    def _due(self, key: K, when: float) -> None:
        with self._lock:
            entry = self._pending.get(key)
            if entry is None or entry[1].when != when or self._stopped:
                return  # rescheduled, discarded or stopped since
            del self._pending[key]
        try:
            self._fire(key)
        except Exception:
            log.exception("announcing a change of %r failed", key)
