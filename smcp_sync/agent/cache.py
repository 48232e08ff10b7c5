"""`ComputerCache`: the latest known value per Computer (its tools, its desktop).

Why tickets: a value is fetched over the network while other threads may fetch the same
Computer, or learn that it left. Each fetch takes a ticket *before* it asks; a result is
kept only if no later-started fetch stored a value, and no drop happened, since the
ticket was taken. So the cache never resurrects a Computer that has left, and an
older answer never overwrites a newer one, whatever order the answers arrive in.

`on_store(computer, value)` is told of each value kept, after the lock is released (the
Agent forwards it to its `on_cache_update` callbacks).
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable, Generic, TypeVar

from ..protocol.models._display import named
from ..threads.forks import after_fork_in_child

T = TypeVar("T")


class ComputerCache(Generic[T]):
    """Thread-safe mapping computer name -> value; read it from any thread."""

    def __init__(self, on_store: Callable[[str, T], None] | None = None) -> None:
        self._on_store = on_store
        self._lock = threading.Condition()
        self._clock = itertools.count(1)
        self._values: dict[str, T] = {}
        self._stamps: dict[str, int] = {}  # computer -> ticket of the last store/drop
        self._floor = 0  # ticket of the last clear()
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): a fresh lock; the values stay (read-only
        use of what the parent knew is harmless)."""
        self._lock = threading.Condition()

    def __repr__(self) -> str:
        with self._lock:
            names = sorted(self._values)
        return f"<ComputerCache of {len(names)} computers: {named(names)}>" if names else "<ComputerCache (empty)>"

    def get(self, computer: str) -> T | None:
        with self._lock:
            return self._values.get(computer)

    def snapshot(self) -> dict[str, T]:
        """A copy of every cached value, by computer name."""
        with self._lock:
            return dict(self._values)

    def wait_for(self, computer: str, timeout: float, *, unlike: T | None = None) -> T | None:
        """Wait up to `timeout` seconds until `computer` has a value (other than `unlike`,
        to wait for a change); returns it, or None when none came in time."""

        def arrived() -> bool:
            value = self._values.get(computer)
            return value is not None and value != unlike

        with self._lock:
            self._lock.wait_for(arrived, timeout)
            value = self._values.get(computer)
            return value if value is not None and value != unlike else None

    def computers(self) -> list[str]:
        with self._lock:
            return sorted(self._values)

    def __contains__(self, computer: object) -> bool:
        with self._lock:
            return computer in self._values

    def ticket(self) -> int:
        """Take before fetching; pass to `store`."""
        with self._lock:
            return next(self._clock)

    def store(self, computer: str, value: T, ticket: int) -> bool:
        """Keep `value` unless something newer than `ticket` happened to `computer`."""
        with self._lock:
            if ticket <= max(self._floor, self._stamps.get(computer, 0)):
                return False
            self._stamps[computer] = ticket
            self._values[computer] = value
            self._lock.notify_all()
        if self._on_store is not None:
            self._on_store(computer, value)
        return True

    def drop(self, computer: str) -> None:
        """Forget `computer`; fetches started before now will not bring it back."""
        with self._lock:
            self._stamps[computer] = next(self._clock)
            self._values.pop(computer, None)

    def clear(self) -> None:
        with self._lock:
            self._floor = next(self._clock)
            self._values.clear()
            self._stamps.clear()
