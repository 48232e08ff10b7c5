"""How MCP servers are supervised: timeouts, liveness checks, restart backoff."""

from __future__ import annotations

from typing import Any, Callable

import attrs
from attrs.validators import ge, gt

_positive: list[Callable[[Any, attrs.Attribute[float], float], Any]] = [gt(0)]


@attrs.frozen
class ServerPolicy:
    """Timing of MCP server supervision (seconds)."""

    #: Connect + initialize + first tools/list.
    init_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: Background requests of the Computer itself (tool-list refresh).
    request_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: An idle connection (no call in flight) is pinged this often; 0 disables.
    health_interval: float = attrs.field(default=30.0, validator=[ge(0)])
    ping_timeout: float = attrs.field(default=5.0, validator=_positive)
    backoff_initial: float = attrs.field(default=0.5, validator=_positive)
    backoff_max: float = attrs.field(default=30.0, validator=_positive)
    #: A connection that lived this long resets the backoff to `backoff_initial`.
    stable_after: float = attrs.field(default=10.0, validator=[ge(0)])
    #: How long stopping may take (closing the session, terminating a stdio child).
    stop_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: How long a Desktop / Finder request waits for resources still being read in the
    #: background (a cold catalogue) before answering with those read so far.
    cold_wait: float = attrs.field(default=5.0, validator=[ge(0)])

    def backoff(self, attempt: int) -> float:
        factor: int = 2 ** min(attempt, 30)  # typeshed: int ** int may be a float (negative powers)
        return min(self.backoff_max, self.backoff_initial * factor)
