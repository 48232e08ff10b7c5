"""What an Agent's dispatcher ran, in order: notification callbacks and cache updates."""

from __future__ import annotations

import threading
from typing import Any, Callable


class Timeline:
    """Register `notified` with `agent.on(event, ...)` and `cache_updated` with
    `agent.on_cache_update`; `entries` holds ``("notified", notification)`` and
    ``(kind, computer, value)`` in the order the Agent ran them (one dispatcher thread)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, ...]] = []
        self.changed = threading.Condition()

    def notified(self, notification: Any) -> None:
        self._add(("notified", notification))

    def cache_updated(self, kind: str, computer: str, value: Any) -> None:
        self._add((kind, computer, value))

    def wait(self, done: Callable[[list[tuple[Any, ...]]], bool], timeout: float = 10.0) -> list[tuple[Any, ...]]:
        """The entries, once `done(entries)` holds."""
        with self.changed:
            assert self.changed.wait_for(lambda: done(self.entries), timeout), f"only {self.entries}"
            return list(self.entries)

    def after(self, notification: Any, kind: str, computer: str) -> list[Any]:
        """The values of `kind` cached for `computer` after `notification` was delivered."""
        with self.changed:
            start = next((i for i, e in enumerate(self.entries) if e == ("notified", notification)), len(self.entries))
            return [e[2] for e in self.entries[start:] if e[:2] == (kind, computer)]

    def _add(self, entry: tuple[Any, ...]) -> None:
        with self.changed:
            self.entries.append(entry)
            self.changed.notify_all()
