"""Coalesces bursts of changes into one announcement per burst, on one thread.

Why: an MCP server may send hundreds of `resources/updated` in a second (a log window, a
document being saved in chunks); each would otherwise become a `server:update_*` and an
Agent refetch. A key fires `quiet` seconds after its last trigger, but no later than
`max_delay` after its first, so a steady stream still announces now and then.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Generic, Hashable, TypeVar

from .thread_stop import join_stopped

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
        self._changed = threading.Condition()
        self._pending: dict[K, tuple[float, float]] = {}  # key -> (first, last) trigger time
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"smcp-computer-debounce[{name}]", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def trigger(self, key: K) -> None:
        """Thread-safe, never blocks for long; ignored once stopped."""
        now = time.monotonic()
        with self._changed:
            if self._stopped:
                return
            first, _ = self._pending.get(key, (now, now))
            self._pending[key] = (first, now)
            self._changed.notify()

    def discard_pending(self) -> None:
        """Drop what is waiting to fire (its announcement has been made moot)."""
        with self._changed:
            self._pending.clear()

    def stop(self, timeout: float) -> None:
        """Stop without firing what is still pending (nobody is listening any more)."""
        with self._changed:
            self._stopped = True
            self._changed.notify()
        join_stopped(self._thread, timeout, "debounce thread")

    def _run(self) -> None:
        while True:
            with self._changed:
                due = self._wait_for_due_keys()
                if due is None:
                    return
            for key in due:
                try:
                    self._fire(key)
                except Exception:
                    log.exception("announcing a change of %r failed", key)

    def _wait_for_due_keys(self) -> list[K] | None:
        """Block until some keys are due (popped and returned) or the debouncer stops (None)."""
        while not self._stopped:
            now = time.monotonic()
            deadlines = {
                key: min(last + self._quiet, first + self._max_delay) for key, (first, last) in self._pending.items()
            }
            due = [key for key, deadline in deadlines.items() if deadline <= now]
            if due:
                for key in due:
                    del self._pending[key]
                return due
            self._changed.wait(min(deadlines.values()) - now if deadlines else None)
        return None
