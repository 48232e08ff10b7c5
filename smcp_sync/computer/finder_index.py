"""The Finder's index: the cached catalogue entries of each MCP server, kept in catalogue
order as they change, so that a `get_finder` pages without gathering, filtering or
sorting the whole catalogue.

Why: a catalogue is asked for far more often than it changes, and a query used to cost
work in the size of the catalogue (10,000 documents: tens of milliseconds, and the
garbage of it). Here the `UriCache` reports each change of a server's values through its
`CacheWatcher` hook, under its lock, and the index applies it to that server's `_Shelf`
alone: one entry in, one out, in each of the shelf's views. A view is the entries of the
server one `CatalogueFilter` keeps, newest first then in listing order (what
`organize_catalogue` gives within a server); every shelf has the unfiltered one, and a
query with another filter makes that view once from it (a scan, never a sort) and finds
it kept current afterwards. A query then walks the servers in their tool-call order,
skipping whole views until its offset: work in the number of servers plus the page.

Values the cache holds that are not entries (a document that could not be read) are not
in the index; values read on demand for a query (a server without subscriptions) are
merged into a throw-away copy of their server's shelf.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, Iterable, Mapping, Reversible, Sequence

from ..context.finder import CatalogueEntry, CatalogueFilter, catalogue_filter, check_page
from ..context.server_order import CallRecord, order_servers
from ..protocol.models import DEFAULT_FINDER_LIMIT, DPEDocumentSummary
from .uri_cache import CacheWatcher

#: Filtered views a shelf keeps besides the unfiltered one (least recently asked dropped).
MAX_VIEWS = 32
#: Values stored at once beyond which a shelf sorts itself again rather than inserting
#: each (the warm-up stores hundreds; a change notice's read, one).
RESORT_FROM = 32

_ALL = CatalogueFilter()

#: A view's sort key: the entry's recency key, its listing position (ties keep listing
#: order; unique in a shelf, so comparisons never reach the entry), the entry.
_Key = tuple[Any, ...]


class _Shelf:
    """One server's cached entries and its views (each a sorted list of `_Key`s)."""

    def __init__(self, uris: Sequence[str], entries: Mapping[str, Any]) -> None:
        self.uris = tuple(uris)
        self._position = {uri: index for index, uri in enumerate(self.uris)}
        self._keys: dict[str, _Key] = {}
        self._views: dict[CatalogueFilter, list[_Key]] = {}
        self.put_many(entries)

    def put_many(self, values: Mapping[str, Any]) -> None:
        """`put` each of `values` (by URI); many at once: one sort, filtered views dropped."""
        if self._views and len(values) <= RESORT_FROM:
            for uri, value in values.items():
                self.put(uri, value)
            return
        for uri, value in values.items():
            self._keys.pop(uri, None)
            if isinstance(value, CatalogueEntry) and uri in self._position:
                self._keys[uri] = (*value.recency, self._position[uri], value)
        self._views = {_ALL: sorted(self._keys.values())}

    def entries(self) -> dict[str, CatalogueEntry]:
        return {uri: key[-1] for uri, key in self._keys.items()}

    def put(self, uri: str, value: Any) -> None:
        """`uri` now has `value` (not an entry: it has none)."""
        self.drop(uri)
        if not isinstance(value, CatalogueEntry) or uri not in self._position:
            return
        key = self._keys[uri] = (*value.recency, self._position[uri], value)
        for wanted, view in self._views.items():
            if wanted.keeps(value):
                bisect.insort(view, key)

    def drop(self, uri: str) -> None:
        key = self._keys.pop(uri, None)
        if key is None:
            return
        for wanted, view in self._views.items():
            if wanted.keeps(key[-1]):
                del view[bisect.bisect_left(view, key)]

    def view(self, wanted: CatalogueFilter) -> list[_Key]:
        """The keys `wanted` keeps, in order; made from the unfiltered view if new."""
        view = self._views.pop(wanted, None)
        if view is None:
            view = [key for key in self._views[_ALL] if wanted.keeps(key[-1])]
            if len(self._views) > MAX_VIEWS:
                del self._views[next(name for name in self._views if name != _ALL)]
        self._views[wanted] = view  # last: most recently asked
        return view


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
                return
            for uri in uris:
                shelf.drop(uri)

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
        query: ``{server: {uri: value}}``, cached ones winning), from the index."""
        check_page(offset, limit)
        wanted = catalogue_filter(keywords, file_type)
        views: dict[str, list[_Key]] = {}
        with self._lock:
            for server in servers:
                shelf = self._shelves.get(server)
                if shelf is None:
                    continue
                extra = read_now.get(server) if read_now else None
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
