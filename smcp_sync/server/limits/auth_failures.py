"""Failed authentications per client address: a budget, a backoff past it, and a log
line per address per interval instead of one per refusal.

Why: without a budget one socket tried ~12,000 keys in 5 s, each refusal logged at
WARNING (a log flood as well as a guessing rate; issue 24). Past `budget` failures
within `AUTH_FAILURE_WINDOW` an address is backed off: its namespace CONNECTs are refused
unchecked and its new connections refused, for a time that doubles with each further
failure (from `FIRST_BACKOFF` up to `MAX_BACKOFF`). A legitimate client behind the same
address (NAT, a proxy) waits out the backoff with it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

logger = logging.getLogger(__name__)

#: Seconds over which an address's failures are counted; an address without a failure
#: for that long starts afresh.
AUTH_FAILURE_WINDOW = 60.0
#: Seconds of the first backoff past the budget; each failure past it doubles the backoff.
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
#: Seconds between the summary lines of refused authentications.
LOG_INTERVAL = 10.0

#: Schedules `action()` at `time.monotonic()` == `when` (`deadlines.Deadlines.call_at`).
Schedule = Callable[[float, Callable[[], Any]], Any]


class _Address:
    __slots__ = ("failures", "last_failure", "backoff", "backed_off_until", "refused", "closed")

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = 0.0
        self.backoff = 0.0
        self.backed_off_until = 0.0
        self.refused = 0  # since the last summary line
        self.closed = 0


class AuthFailures:
    """Thread-safe; `schedule` runs the summary (on the Server's deadline thread).
    `budget=None` counts refusals for the log but never backs an address off."""

    def __init__(self, budget: int | None, schedule: Schedule) -> None:
        self._budget = budget
        self._schedule = schedule
        self._lock = threading.Lock()
        self._addresses: dict[str, _Address] = {}
        self._summary_due = False
        #: Told of each refusal of an address backed off (metrics), when set.
        self.refused_backed_off: Callable[[], None] | None = None

    def backed_off(self, address: str) -> bool:
        """Whether `address` is refused without a check now."""
        with self._lock:
            entry = self._addresses.get(address)
            return entry is not None and entry.backed_off_until > time.monotonic()

    def refused(self, address: str, *, checked: bool, closed: bool) -> None:
        """Count a refused CONNECT from `address`: `checked` when its credentials were
        checked and failed (counts against the budget; one refused unchecked while backed
        off does not), `closed` when its socket was closed for it."""
        now = time.monotonic()
        if not checked and self.refused_backed_off is not None:
            self.refused_backed_off()
        with self._lock:
            entry = self._addresses.get(address)
            if entry is None or (checked and now - entry.last_failure > AUTH_FAILURE_WINDOW and entry.backed_off_until <= now):
                entry = self._addresses[address] = _Address()
            entry.refused += 1
            entry.closed += closed
            if checked:
                entry.failures += 1
                entry.last_failure = now
                if self._budget is not None and entry.failures >= self._budget:
                    entry.backoff = min(MAX_BACKOFF, entry.backoff * 2 or FIRST_BACKOFF)
                    entry.backed_off_until = now + entry.backoff
            if not self._summary_due:
                self._summary_due = True
                self._schedule(now + LOG_INTERVAL, self.log_summary)

    def log_summary(self) -> None:
        """One warning per address refused since the last summary; forget addresses
        whose window and backoff are over."""
        now = time.monotonic()
        with self._lock:
            self._summary_due = False
            lines = [(address, e.refused, e.closed, max(0.0, e.backed_off_until - now)) for address, e in self._addresses.items() if e.refused]
            for entry in self._addresses.values():
                entry.refused = entry.closed = 0
            self._addresses = {
                a: e for a, e in self._addresses.items() if now - e.last_failure <= AUTH_FAILURE_WINDOW or e.backed_off_until > now
            }
        for address, refused, closed, backing_off in lines:
            logger.warning(
                "refused %d namespace connects from %s (authentication failed or backed off); %d connections closed "
                "for it; backed off for %.0f s more",
                refused,
                address,
                closed,
                backing_off,
            )

    def __len__(self) -> int:
        """Addresses remembered."""
        with self._lock:
            return len(self._addresses)
