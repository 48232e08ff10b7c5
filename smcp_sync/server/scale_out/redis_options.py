"""Which Redis a scale-out node shares its offices through, as one value object
`SMCPServer(redis=RedisOptions(...))` takes: plain data, so it imports no Redis client
and a gunicorn worker can be given it to build its Server again (docs/server/scale-out.md).
"""

from __future__ import annotations

from typing import Any

import attrs

#: A node whose heartbeat is older than this is dead: its members are purged.
DEFAULT_NODE_TTL = 5.0


def _at_least_a_second(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        raise ValueError(f"{attribute.name} must be >= 1 second, got {value!r}")


@attrs.frozen
class RedisOptions:
    """`url`: ``redis://``, ``rediss://``, ``unix://`` or ``redis+sentinel://``
    (docs/server/high-availability.md); `prefix` names the deployment in that Redis
    (default ``smcp:<database>:``); a node whose heartbeat is older than `node_ttl`
    seconds is dead to the others."""

    url: str = attrs.field(validator=attrs.validators.and_(attrs.validators.instance_of(str), attrs.validators.min_len(1)), repr=False)
    prefix: str | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str)))
    node_ttl: float = attrs.field(default=DEFAULT_NODE_TTL, validator=_at_least_a_second)
