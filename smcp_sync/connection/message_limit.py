"""The Server's limit on the size of one message, and measuring a message against it.

Why: Engine.IO drops the whole connection when one message exceeds the Server's
`max_http_buffer_size` (docs/ARCHITECTURE.md, Library facts): every pending request of that client fails and
nothing says why. The Server announces its limit (`maxPayload` in the Engine.IO open
packet), so a client can check each message before sending it, refuse one that is too
big with an error that says so, and keep its connection. The check measures the packet as
encoded for sending (`socketio_parts.PooledClient`): a big answer is serialized once.
"""

from __future__ import annotations

import json
from typing import Any


def announced_limit(open_packet: str) -> int | None:
    """`maxPayload` of an Engine.IO open packet (``0{"sid": ..., "maxPayload": N}``)."""
    try:
        limit = json.loads(open_packet[1:]).get("maxPayload")
    except (ValueError, AttributeError):
        return None
    return limit if isinstance(limit, int) and limit > 0 else None


def length_over(limit: int | None, encoded: Any) -> int | None:
    """The length of an encoded Socket.IO packet as the Server's Engine.IO measures it (one
    character more: the Engine.IO packet type) if it exceeds `limit`, else None (also without
    a known limit, or for a packet with binary parts: a list)."""
    if limit is None or not isinstance(encoded, str):
        return None
    length = len(encoded) + 1
    return length if length > limit else None


def too_large(what: str, length: int, limit: int) -> str:
    """The reason a message is refused, with what to do about it."""
    return (
        f"{what} is {length:,} characters long, more than the {limit:,} the Server accepts in one message "
        "(its max_http_buffer_size); ask for less, or raise the Server's limit"
    )
