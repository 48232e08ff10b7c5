"""The order in which MCP servers appear on the Desktop and in the Finder.

Both organisers show first the servers the Agent used most recently, on the theory that
context from the server it is working with is the most relevant; this is the one place
that rule lives (spec/desktop.md step 2, spec/finder.md step 2).
"""

from __future__ import annotations

from typing import Iterable, Protocol, Reversible


class CallRecord(Protocol):
    """All the ordering needs of a tool-call record: the MCP server the call went to. Any
    record with a `server` attribute will do, such as the Computer's
    `smcp_sync.computer.ToolCallRecord`."""

    @property
    def server(self) -> str: ...


def order_servers(servers: Iterable[str], history: Reversible[CallRecord]) -> list[str]:
    """`servers` (deduplicated), most recently called first, then the never-called ones by name.

    `history` is in call order (oldest first). Servers that appear in it but not in
    `servers` are left out: they have nothing to show.
    """
    remaining = set(servers)
    ordered: list[str] = []
    for record in reversed(history):
        if record.server in remaining:
            remaining.discard(record.server)
            ordered.append(record.server)
    return ordered + sorted(remaining)
