"""A notification callback for the Agent's tests that records what the Agent knew."""

from __future__ import annotations

import threading
from typing import Any

from smcp_sync.agent import ComputerCache


class CacheRecorder:
    """Register it with `agent.on(event, recorder)`. It records each notification with what
    `cache` (the Agent's `tool_cache`, `finder_cache`, ...) held for its computer when the
    callback ran: the Agent refreshes its caches before callbacks run, and tests check that."""

    def __init__(self, cache: ComputerCache) -> None:
        self.cache = cache
        self.seen: list[tuple[Any, Any]] = []
        self.changed = threading.Condition()

    def __call__(self, notification: Any) -> None:
        computer = getattr(notification, "computer", None)
        with self.changed:
            self.seen.append((notification, self.cache.get(computer) if computer else None))
            self.changed.notify_all()

    def wait(self, count: int = 1, timeout: float = 10.0) -> list[tuple[Any, Any]]:
        """The notifications so far (with the cache's entries), once there are `count`."""
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.seen) >= count, timeout), f"only {self.seen}"
            return list(self.seen)
