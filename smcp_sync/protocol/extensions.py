"""smcp_sync's extension events and how a peer says it has them.

The Finder and its helpers (docs/ARCHITECTURE.md, Wire decisions) use events no official SDK knows: its Server leaves
them unanswered and its Computer never acks them, so a caller would wait out its whole
timeout. Each side therefore says which extension requests it handles, and the Agent (or
our Server, routing to a Computer) refuses at once what the other side lacks:

* our Server lists the extension requests it routes in the Engine.IO OPEN packet, under
  `OPEN_PACKET_KEY` (python-socketio and the official SDKs ignore unknown keys there);
* our Computer (any `Connection` with handlers for them) lists the ones it answers in
  its connect URL's query, under `QUERY_KEY`, comma-separated, next to `a2c_version`.

A peer that says nothing has none of them. The refusal is a 404 (the event does not
exist at that peer, as for any unknown event) of class `ExtensionNotSupportedError`, with
``details = {"event": ..., "peer": "server" | "computer", "reason": "extension_not_supported"}``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from . import events
from .errors import NotFoundError

#: The extension requests (Agent -> Server -> Computer) smcp_sync peers handle.
EXTENSION_REQUESTS = frozenset({events.GET_FINDER, events.READ_RESOURCE, events.COMPLETE})
#: Where our Server lists them in the Engine.IO OPEN packet.
OPEN_PACKET_KEY = "smcpExtensions"
#: Where our Computer lists them in its connect URL's query.
QUERY_KEY = "smcp_extensions"
#: `details.reason` of a refusal for a missing extension.
NOT_SUPPORTED_REASON = "extension_not_supported"


class ExtensionNotSupportedError(NotFoundError):
    """The peer does not handle this smcp_sync extension event (an official SDK's Server
    or Computer); asking it would only time out."""

    @classmethod
    def refusal(cls, event: str, peer: str, who: str) -> ExtensionNotSupportedError:
        return cls(
            f"{event} is an smcp_sync extension that {who} does not support",
            details={"event": event, "peer": peer, "reason": NOT_SUPPORTED_REASON},
        )

    @classmethod
    def is_one(cls, error: Any) -> bool:
        """Whether a 404 read from the wire is such a refusal (to re-raise it typed)."""
        details = getattr(error, "details", None)
        return isinstance(error, NotFoundError) and isinstance(details, dict) and details.get("reason") == NOT_SUPPORTED_REASON


def query_value(extensions: Iterable[str] = EXTENSION_REQUESTS) -> str:
    """The `QUERY_KEY` value announcing `extensions`."""
    return ",".join(sorted(extensions))


def from_query(values: list[str]) -> frozenset[str]:
    """The extension requests a client announced (`values`: every `QUERY_KEY` value of
    its query); unknown names are ignored, as a peer newer than us may list more."""
    named = {name.strip() for value in values for name in value.split(",")}
    return frozenset(named & EXTENSION_REQUESTS)


def advertisement() -> dict[str, Any]:
    """What our Server adds to the Engine.IO OPEN packet."""
    return {OPEN_PACKET_KEY: sorted(EXTENSION_REQUESTS)}


def from_open_packet(open_packet: str) -> frozenset[str]:
    """The extension requests a Server advertised in its OPEN packet (``0{...}``); none for
    a packet without the key (an official SDK's Server) or one that cannot be read."""
    try:
        listed = json.loads(open_packet[1:]).get(OPEN_PACKET_KEY)
    except (ValueError, AttributeError):
        return frozenset()
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(name for name in listed if isinstance(name, str)) & EXTENSION_REQUESTS

