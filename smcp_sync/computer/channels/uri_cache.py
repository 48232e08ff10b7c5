"""What the Computer remembers of one resource channel (Desktop, Finder or Skills): the
URIs each MCP server lists, what reading them gave (a window's contents, a document's
summary, a staged skill package), and which of them the background warm-up still has
to read.

Why one place with one lock: change detection is a comparison with what was seen before,
and cached values must be dropped exactly when a change is detected, so "compare and
replace", "invalidate and queue for a fresh read" and "answer, or promise to announce
the rest" are each atomic here (docs/ARCHITECTURE.md, Threads). The lock is held for dict operations only,
never across I/O, so the warm-up and readers may wait on it without risk of deadlock.

Values are cached only for URIs the Computer is subscribed to: for those the MCP server
announces edits (`resources/updated`); any other value could go stale unnoticed, so it is
read again each time. A value read while its URI changed is not stored (`Ticket`): each
URI remembers when it last changed, so a storm on one document spoils no other read.

The warm-up has two stages, at work at once (`Warmer`): it subscribes to the URIs it
takes with `take_subscribing` and reports them with `subscribed`, which queues the
accepted ones to be read; it reads the URIs it takes with `take_warming` and reports them
done with `finish`. A reader waits for them with `wait_warm`, but not when the warm-up's
recent pace says it cannot finish in time: the reader then answers at once with what is
read rather than after its whole wait with little more. When a reader had to answer
before they were read, the cache owes the office an announcement, due once nothing is
left to read (`finish` or `subscribed` says when).

A channel may keep a structure of its own over the values (the Finder's index): the
cache reports each change of a server's values to its `CacheWatcher`, under the lock, so
the structure never disagrees with the cache and is updated by the change alone.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import attrs

#: Warm-up batches the warm-up's pace is measured over (the most recent ones).
PACE_BATCHES = 8


class _Pace:
    """How fast the warm-up has lately been finishing URIs."""

    def __init__(self) -> None:
        self._done: collections.deque[tuple[float, int]] = collections.deque(maxlen=PACE_BATCHES)  # (when, URIs)

    def finished(self, count: int, now: float) -> None:
        self._done.append((now, count))

    def idle(self) -> None:
        """Nothing is left to read: the next busy spell is measured afresh (else its pace
        would count the idle time, and a reader would give up waiting at once)."""
        self._done.clear()

    def seconds_for(self, left: int, now: float) -> float | None:
        """Seconds to finish `left` more URIs at the pace since the oldest batch remembered
        (slowing down while none finishes); None before two batches finished."""
        if len(self._done) < 2:
            return None
        count = sum(n for _, n in itertools.islice(self._done, 1, None))
        return left * (now - self._done[0][0]) / count if count else None


class CacheWatcher:
    """Told of every change of the cached values, under the cache's lock (keep it short,
    and take no lock a cache caller may hold). Does nothing by default."""

    def listed(self, server: str, uris: Sequence[str], values: Mapping[str, Any]) -> None:
        """`server`'s listing is now `uris` (in order), with these cached `values`."""

    def stored(self, server: str, values: Mapping[str, Any]) -> None:
        """`values` (by URI) were cached, replacing any earlier ones."""

    def dropped(self, server: str, uris: Iterable[str] | None) -> None:
        """The values of `uris` (None: every value of `server`) were dropped."""

    def forgot(self, server: str) -> None:
        """`server` and all its values are gone."""


class Ticket(NamedTuple):
    """Identifies the cache state a read started from; `store` refuses what changed since."""

    generation: int
    epoch: int


class WarmBatch(NamedTuple):
    """URIs taken for a stage of the background warm-up (subscribing, or reading)."""

    generation: int
    uris: list[str]


@attrs.define
class _Listing:
    generation: int
    uris: tuple[str, ...]
    listed: frozenset[str]
    #: What the channel read from each listed resource itself (Desktop: its layout).
    details: Mapping[str, Any] = attrs.field(factory=dict)
    #: URIs the Computer is subscribed to, in this session (only ever grows).
    cacheable: set[str] = attrs.field(factory=set)
    values: dict[str, Any] = attrs.field(factory=dict)
    #: Counts changes; a `Ticket` holds the count its read started at.
    epoch: int = 0
    #: When each URI last changed (invalidated or newly subscribed to).
    changed_at: dict[str, int] = attrs.field(factory=dict)
    #: When every value last changed (an unlisted URI of the server changed).
    all_changed_at: int = 0
    #: In order: URIs the warm-up is to subscribe to (then to read).
    to_subscribe: dict[str, None] = attrs.field(factory=dict)
    #: Taken by the warm-up to subscribe to, not done yet.
    subscribing: set[str] = attrs.field(factory=set)
    #: In order: URIs the warm-up is to read (subscribed to).
    warming: dict[str, None] = attrs.field(factory=dict)
    #: Taken by the warm-up to read and not finished yet.
    reading: set[str] = attrs.field(factory=set)

    @property
    def pending(self) -> bool:
        return bool(self.to_subscribe or self.subscribing or self.warming or self.reading)

    @property
    def left(self) -> int:
        return len(self.to_subscribe) + len(self.subscribing) + len(self.warming) + len(self.reading)

    def warms(self, uri: str) -> bool:
        """Whether the warm-up is still to read `uri` (maybe to subscribe first)."""
        return uri in self.warming or uri in self.reading or uri in self.to_subscribe or uri in self.subscribing

    def warm_all(self, uris: Iterable[str]) -> None:
        for uri in uris:
            if uri in self.values or uri in self.reading or uri in self.subscribing:
                continue
            if uri in self.cacheable:
                self.warming[uri] = None
            else:
                self.to_subscribe[uri] = None


class UriCache:
    def __init__(self, watcher: CacheWatcher | None = None) -> None:
        self._watcher = watcher if watcher is not None else CacheWatcher()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._listings: dict[str, _Listing] = {}
        #: A reader answered without values still being read: announce once they are.
        self._owed = False
        self._pace = _Pace()

    def replace(
        self,
        server: str,
        generation: int,
        uris: Sequence[str],
        subscribable: bool = False,
        details: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record `server`'s current listing, and the `details` of its URIs; True when its
        URI set or their details differ from the last ones (a server seen for the first
        time counts when it lists any URI). A new `generation` (a new MCP session) drops
        every cached value and subscription of the server. When the server takes
        subscriptions, every listed URI without a value is queued for the warm-up."""
        uris = tuple(dict.fromkeys(uris))
        details = dict(details or {})
        with self._lock:
            old = self._listings.get(server)
            changed = set(uris) != set(old.uris if old is not None else ()) or (
                old is not None and details != old.details
            )
            listing = _Listing(generation, uris, frozenset(uris), details)
            if old is not None and old.generation == generation:
                listing.cacheable = old.cacheable & listing.listed
                listing.values = {u: v for u, v in old.values.items() if u in listing.cacheable}
                listing.epoch, listing.changed_at = old.epoch, old.changed_at
                listing.all_changed_at, listing.reading = old.all_changed_at, old.reading
                listing.subscribing = old.subscribing
            if subscribable:
                listing.warm_all(uris)
            self._listings[server] = listing
            self._watcher.listed(server, listing.uris, listing.values)
            self._changed.notify_all()
            return changed

    def forget(self, server: str) -> bool:
        """Drop everything of `server` (stopped, crashed, removed); True if it listed URIs."""
        with self._lock:
            old = self._listings.pop(server, None)
            if old is not None:
                self._watcher.forgot(server)
            self._changed.notify_all()
            return old is not None and bool(old.uris)

    def invalidate(self, server: str, uri: str) -> None:
        """`uri` of `server` changed: drop its cached value, or every value of the server
        when `uri` is not one it lists (a page of a document, the catalogue: which listed
        value depends on it is the server's business). What was dropped is queued for
        the warm-up to read again."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None:
                return
            listing.epoch += 1
            if uri in listing.listed:
                listing.values.pop(uri, None)
                listing.changed_at[uri] = listing.epoch
                self._watcher.dropped(server, (uri,))
                dropped: Iterable[str] = (uri,) if uri in listing.cacheable else ()
            else:
                listing.values.clear()
                listing.all_changed_at = listing.epoch
                self._watcher.dropped(server, None)
                dropped = (u for u in listing.uris if u in listing.cacheable)
            listing.warming.update((u, None) for u in dropped)
            self._changed.notify_all()

    def subscribed(self, server: str, generation: int, uris: Iterable[str], asked: Sequence[str] = ()) -> bool:
        """The Computer is now subscribed to `uris` of `server` (in session `generation`):
        their values may be cached, but not from a read that started before. `asked`: a
        batch of `take_subscribing`, now done with; those of `uris` among them are queued
        for the warm-up to read, the others (refused) are left to readers. True when an
        announcement is owed and comes due (then settled), as with `finish`."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is not None and listing.generation == generation:
                listing.epoch += 1
                accepted = listing.listed.intersection(uris)
                for uri in accepted:
                    listing.cacheable.add(uri)
                    listing.changed_at[uri] = listing.epoch
                for uri in asked:  # in the warm-up's order
                    if uri in accepted and uri in listing.subscribing and uri not in listing.reading:
                        listing.warming[uri] = None
                listing.subscribing.difference_update(asked)
            self._changed.notify_all()
            return self._owed_now_due()

    def uris(self, server: str) -> tuple[str, ...]:
        with self._lock:
            listing = self._listings.get(server)
            return () if listing is None else listing.uris

    def details(self, server: str) -> Mapping[str, Any]:
        """The details of `server`'s listed URIs (by URI), as its last listing gave them."""
        with self._lock:
            listing = self._listings.get(server)
            return {} if listing is None else listing.details

    def cached(self, server: str) -> tuple[dict[str, Any], Ticket | None]:
        """(a copy of `server`'s cached values by URI, ticket for `store`); ({}, None) when
        `server` is unknown. One lock for all the values: a catalogue has thousands."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None:
                return {}, None
            return dict(listing.values), Ticket(listing.generation, listing.epoch)

    def ticket(self, server: str) -> Ticket | None:
        with self._lock:
            listing = self._listings.get(server)
            return None if listing is None else Ticket(listing.generation, listing.epoch)

    def unread(self, server: str, uris: Iterable[str]) -> tuple[list[str], Ticket | None]:
        """(those of `uris` with no cached value that the warm-up is not reading either,
        ticket for `store`); ([], None) when `server` is unknown."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None:
                return [], None
            ticket = Ticket(listing.generation, listing.epoch)
            if len(listing.values) == len(listing.uris):  # every listed URI has a value (a warm catalogue)
                return [], ticket
            missing = [
                uri
                for uri in uris
                if uri not in listing.values and not listing.warms(uri)
            ]
            return missing, ticket

    def store(self, server: str, values: Mapping[str, Any], ticket: Ticket) -> bool:
        """Cache the cacheable `values` (by URI) that did not change since `ticket`; True
        if every one of them was kept."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None or listing.generation != ticket.generation or listing.all_changed_at > ticket.epoch:
                return False
            kept = {
                uri: value
                for uri, value in values.items()
                if uri in listing.cacheable and listing.changed_at.get(uri, 0) <= ticket.epoch
            }
            listing.values.update(kept)
            self._watcher.stored(server, kept)
            self._changed.notify_all()
            return len(kept) == len(values)

    def take_subscribing(self, server: str, limit: int) -> WarmBatch | None:
        """Up to `limit` URIs for the warm-up to subscribe to (None: nothing to do), marked
        as being subscribed to until `subscribed` names them `asked`."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None or not listing.to_subscribe:
                return None
            return WarmBatch(listing.generation, _take(listing.to_subscribe, listing.subscribing, limit))

    def take_warming(self, server: str, limit: int) -> WarmBatch | None:
        """Up to `limit` subscribed URIs for the warm-up to read (None: nothing to do),
        marked as being read until `finish`."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is None or not listing.warming:
                return None
            return WarmBatch(listing.generation, _take(listing.warming, listing.reading, limit))

    def finish(self, server: str, generation: int, uris: Sequence[str]) -> bool:
        """The warm-up is done with `uris` (read and stored, or given up); True when this
        leaves nothing to read and an announcement is owed (which is then settled)."""
        with self._lock:
            listing = self._listings.get(server)
            if listing is not None and listing.generation == generation:
                listing.reading.difference_update(uris)
            self._pace.finished(len(uris), time.monotonic())
            if not any(listing.pending for listing in self._listings.values()):
                self._pace.idle()
            self._changed.notify_all()
            return self._owed_now_due()

    def _owed_now_due(self) -> bool:
        """An announcement is owed and nothing is left to read: it is due (and settled)."""
        due = self._owed and not any(listing.pending for listing in self._listings.values())
        if due:
            self._owed = False
        return due

    def wait_warm(self, servers: Sequence[str], uri: str | None, timeout: float, stale_ok: bool = False) -> bool:
        """Wait up to `timeout` seconds until the warm-up has nothing left to read of
        `servers` (of `uri` alone, if given); True if so. False means the caller answers
        without those values, and an announcement is owed for when they are read. The
        wait ends early when the warm-up's pace shows it cannot finish in time.

        With `stale_ok`, what is queued during the wait (a change notice) is not waited
        for — a stream of changes would hold up every reader: the caller answers with
        those values as they were before the change."""
        deadline = time.monotonic() + timeout
        with self._lock:
            awaited = {server: self._warming_of(server, uri) for server in servers}
            while any(awaited.values()):
                now = time.monotonic()
                remaining = deadline - now
                needed = self._pace.seconds_for(sum(map(len, awaited.values())), now)
                if remaining <= 0 or (needed is not None and needed > remaining):
                    break
                self._changed.wait(remaining)
                for server, uris in awaited.items():
                    still = self._warming_of(server, uri)
                    awaited[server] = uris & still if stale_ok else still
            if any(awaited.values()):
                self._owed = True
                return False
            return True

    def _warming_of(self, server: str, uri: str | None) -> set[str]:
        """The URIs of `server` (`uri` alone, if given) the warm-up is still to read."""
        listing = self._listings.get(server)
        if listing is None or not listing.pending:
            return set()
        if uri is not None:
            return {uri} if listing.warms(uri) else set()
        return {*listing.to_subscribe, *listing.subscribing, *listing.warming, *listing.reading}

    def progress(self) -> list[tuple[str, int, int]]:
        """(server, URIs still to read, URIs listed) of each server the warm-up is busy with."""
        with self._lock:
            return [
                (server, listing.left, len(listing.uris))
                for server, listing in self._listings.items()
                if listing.pending
            ]

    def cached_values(self) -> list[tuple[str, str, Any]]:
        """Every cached (server, uri, value)."""
        with self._lock:
            return [(s, u, v) for s, listing in self._listings.items() for u, v in listing.values.items()]


def _take(queue: dict[str, None], taken: set[str], limit: int) -> list[str]:
    """The first `limit` of `queue`, moved to `taken`."""
    batch = list(itertools.islice(queue, limit))
    for uri in batch:
        del queue[uri]
    taken.update(batch)
    return batch
