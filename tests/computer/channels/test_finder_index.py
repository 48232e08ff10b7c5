"""The Finder's index (`FinderIndex`, fed by a real `UriCache`): after any sequence of
listings, stored values, change notices and forgotten servers, every page it gives is
the page `organize_catalogue` gives over the same cached values (and, for a document
whose change was noticed and that is not read again yet, its entry from before) — ordering after
updates, removal, relisting, paging across server boundaries, keyword and file-type
filters with updates in between, and the tool-call history reordering servers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.computer.channels import finder_index
from smcp_sync.computer.channels.finder_index import MAX_VIEWS, FinderIndex
from smcp_sync.computer.channels.uri_cache import UriCache
from smcp_sync.context.finder_order import CatalogueEntry, catalogue_entry, organize_catalogue
from smcp_sync.protocol.models import DPEDocumentSummary

pytestmark = pytest.mark.timeout(120)

SERVERS = ("beta", "alpha", "gamma")
REFS = tuple(f"d{i}" for i in range(6))
TIMES = (None, "2026-01-01T00:00:00Z", "2026-01-01T08:00:00+08:00", "2026-03-01T00:00:00Z", "not a time")
TITLES = ("Budget plan", "Quarterly report", "notes", "BUDGET review")
FILE_TYPES = ("pdf", "md")
GENERATION = 1


def uri(server: str, ref: str) -> str:
    return f"dpe://{server}.docs/{ref}"


def entry(server: str, ref: str, title: str, file_type: str, last_modified: str | None) -> CatalogueEntry:
    summary = DPEDocumentSummary(
        doc_ref=ref, uri=uri(server, ref), file_uri=f"file:///{ref}", file_type=file_type, title=title,
        page_count=1, server=server, last_modified=last_modified, keywords=["plan"] if "plan" in title else None,
    )  # fmt: skip
    return catalogue_entry(summary)


def calls(*servers: str) -> list[Any]:
    return [SimpleNamespace(server=server) for server in servers]


class Catalogue:
    """A cache with the index watching it, and the plain organiser over the same values."""

    def __init__(self) -> None:
        self.index = FinderIndex()
        self.cache = UriCache(self.index)
        #: The model of stale entries: what a changed document was, by server and URI.
        self.stale: dict[str, dict[str, CatalogueEntry]] = {}

    def list(self, server: str, refs: list[str]) -> None:
        uris = [uri(server, ref) for ref in refs]
        self.cache.replace(server, GENERATION, uris, subscribable=True)
        self.cache.subscribed(server, GENERATION, uris)
        self.stale[server] = {u: e for u, e in self.stale.get(server, {}).items() if u in uris}

    def invalidate(self, server: str, changed: str) -> None:
        """A change notice: the cached entries it drops (every one of the server when
        `changed` is not a URI it lists) become stale."""
        every = changed not in self.cache.uris(server)
        for u, value in self.cache.cached(server)[0].items():
            if isinstance(value, CatalogueEntry) and (every or u == changed):
                self.stale.setdefault(server, {})[u] = value
        self.cache.invalidate(server, changed)

    def forget(self, server: str) -> None:
        self.cache.forget(server)
        self.stale.pop(server, None)

    def store(self, server: str, ref: str, value: Any) -> None:
        self.store_many(server, {ref: value})

    def store_many(self, server: str, values: dict[str, Any]) -> None:
        ticket = self.cache.ticket(server)
        if ticket is not None:
            stored = {uri(server, ref): value for ref, value in values.items()}
            self.cache.store(server, stored, ticket)
            for u in stored:
                if u in self.cache.uris(server):
                    self.stale.get(server, {}).pop(u, None)

    def expected(self, servers, read_now=None, **query) -> tuple[list[str], int]:
        entries = []
        for server in servers:
            values = {**self.stale.get(server, {}), **(read_now or {}).get(server, {}), **self.cache.cached(server)[0]}
            listed = self.cache.uris(server)
            entries += [values[u] for u in listed if isinstance(values.get(u), CatalogueEntry)]
        page, total = organize_catalogue(entries, **query)
        return [d.uri for d in page], total

    def actual(self, servers, read_now=None, **query) -> tuple[list[str], int]:
        page, total = self.index.page(servers, read_now=read_now, **query)
        return [d.uri for d in page], total

    def check(self, servers=SERVERS, read_now=None, **query) -> tuple[list[str], int]:
        found = self.actual(servers, read_now, **query)
        assert found == self.expected(servers, read_now, **query)
        return found


entries = st.builds(
    lambda title, file_type, time: (title, file_type, time),
    st.sampled_from(TITLES),
    st.sampled_from(FILE_TYPES),
    st.sampled_from(TIMES),
)
servers = st.sampled_from(SERVERS)
refs = st.sampled_from(REFS)
queries = st.fixed_dictionaries(
    {
        "keywords": st.sampled_from([None, [], ["budget"], ["quarterly", "notes"], ["PLAN"], [""], ["plan\0plan", "notes"]]),
        "file_type": st.sampled_from([None, "", "pdf", "md"]),
        "history": st.lists(servers, max_size=4).map(lambda names: calls(*names)),
        "offset": st.integers(0, 20),
        "limit": st.integers(1, 8),
    }
)
operations = st.one_of(
    st.tuples(st.just("list"), servers, st.lists(refs, unique=True)),
    st.tuples(st.just("store"), servers, refs, entries),
    st.tuples(st.just("store_many"), servers, st.dictionaries(refs, entries, min_size=3)),
    st.tuples(st.just("store_unreadable"), servers, refs),
    st.tuples(st.just("invalidate"), servers, refs),
    st.tuples(st.just("invalidate_all"), servers),
    st.tuples(st.just("forget"), servers),
    st.tuples(st.just("query"), queries),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, max_size=40), queries, st.sampled_from([finder_index.RESORT_FROM, 2]), st.booleans())
def test_the_index_pages_as_the_organiser_does_after_any_changes(steps, last_query, resort_from, from_full):
    with mock.patch.object(finder_index, "RESORT_FROM", resort_from):  # 2: a store of 3 sorts again
        run_and_check(steps, last_query, full_catalogue() if from_full else Catalogue())


def run_and_check(steps: list[tuple[Any, ...]], last_query: dict[str, Any], catalogue: Catalogue) -> None:
    """`steps` from `catalogue` (from empty, most steps find nothing to change: a store
    needs its server's listing first; from a full one, every step has entries to work on)."""
    for step in steps:
        kind, *args = step
        if kind == "list":
            catalogue.list(*args)
        elif kind == "store":
            server, ref, (title, file_type, time) = args
            catalogue.store(server, ref, entry(server, ref, title, file_type, time))
        elif kind == "store_many":
            server, drawn = args
            catalogue.store_many(server, {ref: entry(server, ref, *fields) for ref, fields in drawn.items()})
        elif kind == "store_unreadable":
            catalogue.store(*args, object())  # the cache holds why a document was left out
        elif kind == "invalidate":
            catalogue.invalidate(args[0], uri(*args))
        elif kind == "invalidate_all":
            catalogue.invalidate(args[0], f"dpe://{args[0]}.docs")  # not a listed URI: every value
        elif kind == "forget":
            catalogue.forget(args[0])
        else:
            catalogue.check(**args[0])
    catalogue.check(**last_query)
    catalogue.check(servers=SERVERS[1:], **last_query)  # a server not asked about is left out


def full_catalogue() -> Catalogue:
    """Each server lists d0..d5, d5 of each undated, every other one a pdf."""
    catalogue = Catalogue()
    for server in SERVERS:
        catalogue.list(server, list(REFS))
        for i, ref in enumerate(REFS):
            time = None if i == 5 else f"2026-01-0{i + 1}T00:00:00Z"
            catalogue.store(server, ref, entry(server, ref, TITLES[i % 4], FILE_TYPES[i % 2], time))
    return catalogue


def test_pages_cross_server_boundaries_in_history_then_name_order():
    catalogue = full_catalogue()
    history = calls("beta", "gamma")  # gamma most recent, then beta, then alpha by name
    pages = [catalogue.check(history=history, offset=offset, limit=4)[0] for offset in range(0, 18, 4)]
    flat = [u for page in pages for u in page]
    assert flat[:6] == [uri("gamma", ref) for ref in ("d4", "d3", "d2", "d1", "d0", "d5")]
    assert [u.split(".")[0] for u in flat] == ["dpe://gamma"] * 6 + ["dpe://beta"] * 6 + ["dpe://alpha"] * 6
    assert catalogue.check(history=history, offset=18, limit=4) == ([], 18)


def test_an_update_moves_one_document_and_keeps_filtered_views_current():
    catalogue = full_catalogue()
    assert catalogue.check(keywords=["quarterly"], file_type="md")[1] == 6  # views made now
    catalogue.store("alpha", "d0", entry("alpha", "d0", "Quarterly report", "md", "2027-01-01T00:00:00Z"))
    page, total = catalogue.check(keywords=["quarterly"], file_type="md")
    assert total == 7 and page[0] == uri("alpha", "d0")
    catalogue.invalidate("alpha", uri("alpha", "d0"))  # stale until read again: still shown
    page, total = catalogue.check(keywords=["quarterly"], file_type="md")
    assert total == 7 and page[0] == uri("alpha", "d0")
    catalogue.store("alpha", "d0", entry("alpha", "d0", "notes", "md", "2027-01-01T00:00:00Z"))
    assert catalogue.check(keywords=["quarterly"], file_type="md")[1] == 6


def test_a_warm_up_batch_reorders_the_shelf_and_its_filtered_views():
    catalogue = full_catalogue()
    assert catalogue.check(keywords=["budget"], file_type="pdf")[1] == 6
    batch = {ref: entry("beta", ref, "Budget plan", "pdf", f"2027-01-0{i + 1}T00:00:00Z") for i, ref in enumerate(REFS)}
    with mock.patch.object(finder_index, "RESORT_FROM", 2):
        catalogue.store_many("beta", batch)
    page, total = catalogue.check(keywords=["budget"], file_type="pdf", limit=6, history=calls("beta"))
    assert total == 10 and page == [uri("beta", ref) for ref in reversed(REFS)]


def test_relisting_in_another_order_changes_the_tie_break_of_undated_documents():
    catalogue = Catalogue()
    catalogue.list("alpha", ["d0", "d1", "d2"])
    for ref in ("d0", "d1", "d2"):
        catalogue.store("alpha", ref, entry("alpha", ref, "notes", "md", None))
    assert catalogue.check()[0] == [uri("alpha", ref) for ref in ("d0", "d1", "d2")]
    catalogue.list("alpha", ["d2", "d0"])  # d1 unlisted, the others in a new order
    assert catalogue.check()[0] == [uri("alpha", ref) for ref in ("d2", "d0")]


def test_values_read_for_one_query_join_their_servers_shelf():
    catalogue = full_catalogue()
    catalogue.list("beta", list(REFS) + ["extra"])
    read_now = {"beta": {uri("beta", "extra"): entry("beta", "extra", "Budget plan", "pdf", "2030-01-01T00:00:00Z")}}
    page, total = catalogue.check(read_now=read_now, keywords=["budget"], history=calls("beta"))
    assert page[0] == uri("beta", "extra") and total == 10
    assert catalogue.check(keywords=["budget"])[1] == 9  # nothing of it stayed


def test_many_filters_are_served_while_old_views_are_dropped():
    catalogue = full_catalogue()
    for n in range(MAX_VIEWS + 5):
        catalogue.check(keywords=[f"no such word {n}", "budget"])
    catalogue.store("gamma", "d1", entry("gamma", "d1", "Budget plan", "md", "2027-01-01T00:00:00Z"))
    for n in range(MAX_VIEWS + 5):
        catalogue.check(keywords=[f"no such word {n}", "budget"])


def test_a_changed_document_is_answered_as_before_the_change_until_read_again():
    catalogue = full_catalogue()
    changed = uri("alpha", "d0")
    catalogue.cache.invalidate("alpha", changed)  # no value in the cache now...
    assert changed not in catalogue.cache.cached("alpha")[0]
    page, total = catalogue.index.page(SERVERS, limit=100)
    assert total == 18 and changed in [d.uri for d in page]  # ...but the summary from before the change
    catalogue.store("alpha", "d0", entry("alpha", "d0", "Renamed", "md", "2027-01-01T00:00:00Z"))
    page, total = catalogue.index.page(SERVERS, keywords=["renamed"])
    assert (total, [d.title for d in page]) == (1, ["Renamed"])  # read again: the new one, not both
    catalogue.cache.invalidate("alpha", "dpe://alpha.docs")  # every document of the server
    assert catalogue.index.page(SERVERS)[1] == 18
    catalogue.store("alpha", "d0", object())  # unreadable now: left out
    assert catalogue.index.page(SERVERS)[1] == 17
    catalogue.list("alpha", ["d1", "d2"])  # unlisted: gone, stale or not
    assert catalogue.index.page(SERVERS)[1] == 14


def test_a_keyword_holding_the_text_separator_matches_within_one_text_only():
    catalogue = full_catalogue()  # "Budget plan" documents have the keyword "plan"
    assert catalogue.check(keywords=["plan\0plan"]) == ([], 0)  # not across title and keyword
    assert catalogue.check(keywords=["plan\0plan", "budget plan"])[1] == 6


def test_a_stale_entry_outlives_a_relisting_in_another_order_while_still_listed():
    catalogue = full_catalogue()
    catalogue.invalidate("alpha", uri("alpha", "d0"))
    catalogue.list("alpha", ["d1", "d0", "d2"])  # a new order: the shelf is made again
    page, total = catalogue.check(limit=100)
    assert total == 15 and uri("alpha", "d0") in page
