"""What the Computer remembers of one resource channel (Desktop or Finder): the URIs each
MCP server lists, and what reading them gave (a window's contents, a document's summary).

Why one place with one lock: change detection is a comparison with what was seen before,
and cached values must be dropped exactly when a change is detected, so "compare and
replace" and "invalidate" are atomic here (DESIGN §2). The lock is held for dict
operations only, never across I/O, and the bridge loop never takes it.

Values are cached only for URIs the Computer is subscribed to: for those the MCP server
announces edits (`resources/updated`); any other value could go stale unnoticed, so it is
read again each time. A value read while a change arrived is not stored (`Ticket`).
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import attrs


class Ticket(NamedTuple):
    """Identifies the cache state a read started from; `store` refuses a stale one."""

    generation: int
    epoch: int


@attrs.define
class _Listing:
    generation: int
    uris: tuple[str, ...]
    cacheable: frozenset[str]
    values: dict[str, Any] = attrs.field(factory=dict)
    #: Bumped on every invalidation, so a read that started before it cannot store.
    epoch: int = 0


class UriCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listings: dict[str, _Listing] = {}

    def replace(self, server: str, generation: int, uris: Sequence[str], cacheable: Iterable[str] = ()) -> bool:
        """Record `server`'s current listing; True when its URI set differs from the last
        one (a server seen for the first time counts when it lists any URI). A new
        `generation` (a new MCP session) drops every cached value of the server."""
        uris = tuple(dict.fromkeys(uris))
        with self._lock:
            old = self._listings.get(server)
            changed = set(uris) != set(old.uris if old is not None else ())
            listing = _Listing(generation, uris, frozenset(cacheable) & set(uris))
            if old is not None and old.generation == generation:
                listing.values = {u: v for u, v in old.values.items() if u in listing.cacheable}
                listing.epoch = old.epoch + 1
            self._listings[server] = listing
            return changed

    def forget(self, server: str) -> bool:
        """Drop everything of `server` (stopped, crashed, removed); True if it listed URIs."""
        with self._lock:
            old = self._listings.pop(server, None)
            return old is not None and bool(old.uris)

    def invalidate(self, server: str, uri: str) -> None:
        """`uri` of `server` changed: drop its cached value, or every value of the server
        when `uri` is not one it lists (a page of a document, the catalogue: which listed
        value depends on it is the server's business)."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None:
                return
            listing.epoch += 1
            if uri in listing.uris:
                listing.values.pop(uri, None)
            else:
                listing.values.clear()

    def generation(self, server: str) -> int | None:
        with self._lock:
            listing = self._listings.get(server)
            return None if listing is None else listing.generation

    def uris(self, server: str) -> tuple[str, ...]:
        with self._lock:
            listing = self._listings.get(server)
            return () if listing is None else listing.uris

    def cached(self, server: str) -> tuple[dict[str, Any], Ticket | None]:
        """(a copy of `server`'s cached values by URI, ticket for `store`); ({}, None) when
        `server` is unknown. One lock for all the values: a catalogue has thousands."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None:
                return {}, None
            return dict(listing.values), Ticket(listing.generation, listing.epoch)

    def store(self, server: str, values: Mapping[str, Any], ticket: Ticket) -> bool:
        """Cache the cacheable `values` (by URI) unless the server changed since `ticket`."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None or Ticket(listing.generation, listing.epoch) != ticket:
                return False
            listing.values.update((uri, value) for uri, value in values.items() if uri in listing.cacheable)
            return True

    def cached_values(self) -> list[tuple[str, str, Any]]:
        """Every cached (server, uri, value)."""
        with self._lock:
            return [(s, u, v) for s, listing in self._listings.items() for u, v in listing.values.items()]
