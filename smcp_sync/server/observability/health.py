"""`GET /health/live` and `GET /health/ready`, as JSON.

Live: the process answers HTTP; it looks at nothing else, so a Redis outage never gets a
healthy node restarted. Ready: the Server accepts connections (not stopped) and its
office registry can take joins (`OfficeRegistry.readiness`: with Redis, reachable and
its epoch settled, nothing left to write back after a rebuild), so a load balancer sends
new clients elsewhere meanwhile.
"""

from __future__ import annotations

from typing import Any, Callable

from ..offices.registry import OfficeRegistry

#: (HTTP status, JSON body) of a probe.
Probe = tuple[int, dict[str, Any]]


class Health:
    def __init__(self, registry: OfficeRegistry, accepting: Callable[[], bool]) -> None:
        self._registry = registry
        self._accepting = accepting

    def live(self) -> Probe:
        return 200, {"status": "live"}

    def ready(self) -> Probe:
        accepting = self._accepting()
        registry = self._registry.readiness()
        ready = accepting and bool(registry["ready"])
        body = {"status": "ready" if ready else "not ready", "accepting": accepting, "registry": registry}
        return (200 if ready else 503), body
