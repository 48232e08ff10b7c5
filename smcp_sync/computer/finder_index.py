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
in the index; values read on demand for a query (a server without subscriptions) are
merged into a throw-away copy of their server's shelf.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from typing import Any, Iterable, Mapping, Reversible, Sequence

from ..context.finder import CatalogueEntry, CatalogueFilter, catalogue_filter, check_page
from ..context.server_order import CallRecord, order_servers
from ..protocol.models import DEFAULT_FINDER_LIMIT, DPEDocumentSummary
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
    unfiltered one and one per file type, always; one per keyword filter asked lately."""

    def __init__(self, uris: Sequence[str], entries: Mapping[str, Any]) -> None:
        self.uris = tuple(uris)
        self._position = {uri: index for index, uri in enumerate(self.uris)}
        self._keys: dict[str, _Key] = {}
        self._views: dict[CatalogueFilter, list[_Key]] = {_ALL: []}
        self._searches: dict[CatalogueFilter, list[_Key]] = {}  # least recently asked first
        #: The entries change notices dropped, until their documents are read again.
        self.before_change: dict[str, CatalogueEntry] = {}
        self.put_many(entries)

    def put_many(self, values: Mapping[str, Any]) -> None:
        """`put` each of `values` (by URI); many at once: one sort, keyword views dropped."""
        if len(values) <= RESORT_FROM:
            for uri, value in values.items():
                self.put(uri, value)
            return
        for uri, value in values.items():
            self._keys.pop(uri, None)
            self.before_change.pop(uri, None)
            if isinstance(value, CatalogueEntry) and uri in self._position:
                self._keys[uri] = (*value.recency, self._position[uri], value)
        everything = sorted(self._keys.values())
        self._views = {_ALL: everything}
        for key in everything:
            self._views.setdefault(_of_type(key[-1]), []).append(key)
        self._searches = {}

    def entries(self) -> dict[str, CatalogueEntry]:
        return {uri: key[-1] for uri, key in self._keys.items()}

    def put(self, uri: str, value: Any) -> None:
        """`uri` now has `value` (not an entry: it has none)."""
        self.drop(uri)
        self.before_change.pop(uri, None)
        if not isinstance(value, CatalogueEntry) or uri not in self._position:
            return
        key = self._keys[uri] = (*value.recency, self._position[uri], value)
        self._views.setdefault(_of_type(value), [])
        for wanted, view in self._filtered():
            if wanted.keeps(value):
                bisect.insort(view, key)

    def drop(self, uri: str, changed: bool = False) -> None:
        """`uri` has no value now; `changed`: because a change notice came for it."""
        key = self._keys.pop(uri, None)
        if key is None:
            return
        if changed:
            self.before_change[uri] = key[-1]
        for wanted, view in self._filtered():
            if wanted.keeps(key[-1]):
                del view[bisect.bisect_left(view, key)]

    def view(self, wanted: CatalogueFilter) -> list[_Key]:
        """The keys `wanted` keeps, in order; a keyword view is made (from the view of its
        file type) if new."""
        if not wanted.needles:
            return self._views.get(wanted, [])  # no view of a file type: none of it here
        view = self._searches.pop(wanted, None)
        if view is None:
            keeps = wanted.keeps
            view = [key for key in self.view(_of_type(wanted)) if keeps(key[-1])]
            if len(self._searches) >= MAX_VIEWS:
                del self._searches[next(iter(self._searches))]
        self._searches[wanted] = view  # last: most recently asked
        return view

    def _filtered(self) -> Iterable[tuple[CatalogueFilter, list[_Key]]]:
        return itertools.chain(self._views.items(), self._searches.items())


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
                self._shelves[server] = _Shelf(uris, values)
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
            if uris is None:
                self._shelves[server] = _Shelf(shelf.uris, {})
                self._shelves[server].before_change.update({**shelf.before_change, **shelf.entries()})
                return
            for uri in uris:
                shelf.drop(uri, changed=True)

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
        late: Mapping[str, Iterable[str]] | None = None,
    ) -> tuple[list[DPEDocumentSummary], int]:
        """`organize_catalogue` over the entries of `servers` (and those `read_now` for a
        query: ``{server: {uri: value}}``, cached ones winning), from the index. The
        documents `late` names (``{server: uris}``: changed while the query waited) are
        answered as they were before the change, until they are read again."""
        check_page(offset, limit)
        wanted = catalogue_filter(keywords, file_type)
        views: dict[str, list[_Key]] = {}
        with self._lock:
            for server in servers:
                shelf = self._shelves.get(server)
                if shelf is None:
                    continue
                extra = {**(read_now or {}).get(server, {})}
                for uri in (late or {}).get(server, ()):
                    if uri in shelf.before_change:
                        extra.setdefault(uri, shelf.before_change[uri])
                if extra:
                    shelf = _Shelf(shelf.uris, {**extra, **shelf.entries()})
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
