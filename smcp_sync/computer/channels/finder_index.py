"""The Finder's index: the cached catalogue entries of each MCP server, kept in catalogue
order as they change, so that a `get_finder` pages without gathering, filtering or
sorting the whole catalogue.

Why: a catalogue is asked for far more often than it changes, and a query used to cost
work in the size of the catalogue (10,000 documents: tens of milliseconds, and the
garbage of it). Here the `UriCache` reports each change of a server's values through its
`CacheWatcher` hook, under its lock, and the index applies it to that server's `_Shelf`
alone: one entry in, one out, in each of the shelf's views. A view is the entries of the
server one `CatalogueFilter` keeps, newest first then in listing order (what
`organize_catalogue` gives within a server). Every shelf keeps the unfiltered view and
one per file type; a query with keywords makes its view once from its file type's (a
scan, never a sort) and finds it kept current afterwards (the last `MAX_VIEWS` keyword
filters are kept). A query then walks the servers in their tool-call order, skipping
whole views until its offset: work in the number of servers plus the page.

Values the cache holds that are not entries (a document that could not be read) are not
in the index; an entry whose document changed stays, stale, until the document is read
again (a query answers with what it was, not without it: `_Shelf`); values read on
demand for a query (a server without subscriptions) are merged into a throw-away copy
of their server's shelf.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from typing import Any, Iterable, Mapping, Reversible, Sequence

from ...context.finder_order import TEXT_SEPARATOR, CatalogueEntry, CatalogueFilter, catalogue_filter
from ...context.server_order import CallRecord, order_servers
from ...protocol.models import DEFAULT_FINDER_LIMIT, DPEDocumentSummary
from .uri_cache import CacheWatcher

#: Keyword views a shelf keeps (the least recently asked is dropped).
MAX_VIEWS = 32
#: Values stored at once beyond which a shelf sorts itself again rather than inserting
#: each (the warm-up stores hundreds; a change notice's read, one).
RESORT_FROM = 32

_ALL = CatalogueFilter()

#: A view's sort key: the entry's recency key, its listing position (ties keep listing
#: order; unique in a shelf, so comparisons never reach the entry), the entry.
_Key = tuple[Any, ...]


class _Shelf:
    """One server's cached entries and its views (each a sorted list of `_Key`s): the
    unfiltered one and one per file type, always; one per keyword filter asked lately.

    An entry whose document changed stays in the views, `stale`, until the document is
    read again (its new entry replaces it) or found unreadable or unlisted: a query
    answers with what the document was rather than without it."""

    def __init__(
        self, uris: Sequence[str], entries: Mapping[str, Any], stale: Mapping[str, CatalogueEntry] | None = None
    ) -> None:
        self.uris = tuple(uris)
        self._position = {uri: index for index, uri in enumerate(self.uris)}
        self._keys: dict[str, _Key] = {}
        self._views: dict[CatalogueFilter, list[_Key]] = {_ALL: []}
        self._searches: dict[CatalogueFilter, list[_Key]] = {}  # least recently asked first
        #: URIs whose entry is from before a change notice, until they are read again.
        self.stale: set[str] = set()
        self.put_many({**(stale or {}), **entries})
        self.stale.update(uri for uri in stale or () if uri not in entries and uri in self._keys)

    def put_many(self, values: Mapping[str, Any]) -> None:
        """`put` each of `values` (by URI); many at once: one sort, keyword views dropped."""
        if len(values) <= RESORT_FROM:
            for uri, value in values.items():
                self.put(uri, value)
            return
        for uri, value in values.items():
            self._keys.pop(uri, None)
            self.stale.discard(uri)
            if isinstance(value, CatalogueEntry) and uri in self._position:
                self._keys[uri] = (*value.recency, self._position[uri], value)
        everything = sorted(self._keys.values())
        self._views = {_ALL: everything}
        for key in everything:
            self._views.setdefault(_of_type(key[-1]), []).append(key)
        self._searches = {}

    def entries(self) -> dict[str, CatalogueEntry]:
        """The entries as the cache holds them (the stale ones are not)."""
        return {uri: key[-1] for uri, key in self._keys.items() if uri not in self.stale}

    def stale_entries(self) -> dict[str, CatalogueEntry]:
        return {uri: self._keys[uri][-1] for uri in self.stale}

    def put(self, uri: str, value: Any) -> None:
        """`uri` now has `value` (not an entry: it has none)."""
        self.drop(uri)
        if not isinstance(value, CatalogueEntry) or uri not in self._position:
            return
        key = self._keys[uri] = (*value.recency, self._position[uri], value)
        self._views.setdefault(_of_type(value), [])
        for wanted, view in self._filtered():
            if wanted.keeps(value):
                bisect.insort(view, key)

    def drop(self, uri: str) -> None:
        """`uri` has no entry now."""
        self.stale.discard(uri)
        key = self._keys.pop(uri, None)
        if key is None:
            return
        for wanted, view in self._filtered():
            if wanted.keeps(key[-1]):
                del view[bisect.bisect_left(view, key)]

    def changed(self, uri: str) -> None:
        """A change notice came for `uri`: its entry is stale until read again."""
        if uri in self._keys:
            self.stale.add(uri)

    def view(self, wanted: CatalogueFilter) -> list[_Key]:
        """The keys `wanted` keeps, in order; a keyword view is made (from the view of its
        file type) if new."""
        if not wanted.needles:
            return self._views.get(wanted, [])  # no view of a file type: none of it here
        view = self._searches.pop(wanted, None)
        if view is None:
            view = _search(self.view(_of_type(wanted)), wanted)
            if len(self._searches) >= MAX_VIEWS:
                del self._searches[next(iter(self._searches))]
        self._searches[wanted] = view  # last: most recently asked
        return view

    def _filtered(self) -> Iterable[tuple[CatalogueFilter, list[_Key]]]:
        return itertools.chain(self._views.items(), self._searches.items())


def _search(view: list[_Key], wanted: CatalogueFilter) -> list[_Key]:
    """The keys of `view` whose entries `wanted`'s keywords keep (the file type is the
    view's already). Keywords without the text separator (all but odd ones) are found in
    one comprehension: a call of `keeps` per entry costs seven times as much (10,000
    entries: 11 ms against 1.5 ms on this machine)."""
    needles = wanted.needles
    if any(TEXT_SEPARATOR in needle for needle in needles):
        keeps = wanted.keeps
        return [key for key in view if keeps(key[-1])]
    if len(needles) == 1:
        (needle,) = needles
        return [key for key in view if needle in key[-1].folded_text]
    return [key for key in view if any(needle in key[-1].folded_text for needle in needles)]


def _of_type(item: CatalogueEntry | CatalogueFilter) -> CatalogueFilter:
    """The filter of an entry's file type, or of a filter's file type alone."""
    return CatalogueFilter((), item.summary.file_type if isinstance(item, CatalogueEntry) else item.file_type)


class FinderIndex(CacheWatcher):
    """The Finder channel's `CacheWatcher`: a `_Shelf` per server, behind a lock of its own
    (a query never waits for the cache's lock, only for a change being applied)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shelves: dict[str, _Shelf] = {}

    # -- the cache's hooks ----------------------------------------------------------------

    def listed(self, server: str, uris: Sequence[str], values: Mapping[str, Any]) -> None:
        with self._lock:
            shelf = self._shelves.get(server)
            if shelf is None or shelf.uris != tuple(uris):  # listing order is the tie-break
                stale = {} if shelf is None else shelf.stale_entries()
                self._shelves[server] = _Shelf(uris, values, stale)
                return
            for uri, entry in shelf.entries().items():
                if values.get(uri) is not entry:
                    shelf.drop(uri)
            held = shelf.entries()
            for uri, value in values.items():
                if uri not in held:
                    shelf.put(uri, value)

    def stored(self, server: str, values: Mapping[str, Any]) -> None:
        with self._lock:
            shelf = self._shelves.get(server)
            if shelf is not None:
                shelf.put_many(values)

    def dropped(self, server: str, uris: Iterable[str] | None) -> None:
        with self._lock:
            shelf = self._shelves.get(server)
            if shelf is None:
                return
            for uri in shelf.uris if uris is None else uris:
                shelf.changed(uri)

    def forgot(self, server: str) -> None:
        with self._lock:
            self._shelves.pop(server, None)

    # -- queries --------------------------------------------------------------------------

    def page(
        self,
        servers: Sequence[str],
        history: Reversible[CallRecord] = (),
        keywords: Sequence[str] | None = None,
        file_type: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
        read_now: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> tuple[list[DPEDocumentSummary], int]:
        """`organize_catalogue` over the entries of `servers` (and those `read_now` for a
        query: ``{server: {uri: value}}``, cached ones winning; stale ones losing). Its
        paging was checked where the query entered (`FinderCatalogue.page`)."""
        wanted = catalogue_filter(keywords, file_type)
        views: dict[str, list[_Key]] = {}
        with self._lock:
            for server in servers:
                shelf = self._shelves.get(server)
                if shelf is None:
                    continue
                extra = (read_now or {}).get(server)
                if extra:
                    shelf = _Shelf(shelf.uris, {**extra, **shelf.entries()}, shelf.stale_entries())
                view = shelf.view(wanted)
                if view:
                    views[server] = view
            found: list[DPEDocumentSummary] = []
            skip = offset
            for server in order_servers(views, history):
                view = views[server]
                if skip >= len(view):
                    skip -= len(view)
                    continue
                found.extend(key[-1].summary for key in view[skip : skip + limit - len(found)])
                skip = 0
                if len(found) == limit:
                    break
            return found, sum(map(len, views.values()))
