"""The Finder organiser: every case of the SDK guide's "Finder Organizer" test strategy, plus
spec/finder.md steps 1-4 with the ordering rule of docs/ARCHITECTURE.md, Wire decisions. Orders and counts are exact."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from smcp_sync.context import CallRecord, organize_finder
from smcp_sync.context.finder_order import catalogue_entry, organize_catalogue
from smcp_sync.protocol.errors import BadRequestError, InvalidURIError
from smcp_sync.protocol.models import DPEDocumentSummary

pytestmark = pytest.mark.timeout(30)


def doc(ref: str, server: str = "docs", **fields) -> DPEDocumentSummary:
    values = {
        "doc_ref": ref,
        "uri": f"dpe://{server}/{ref}",
        "file_uri": f"file:///data/{ref}",
        "file_type": "pdf",
        "title": ref,
        "page_count": 1,
        "server": server,
        **fields,
    }
    return DPEDocumentSummary(**values)


def calls(*servers: str) -> list[CallRecord]:
    """A tool-call history: all the organisers read of a record is its `server`."""
    return [SimpleNamespace(server=s) for s in servers]


def refs(page: list[DPEDocumentSummary]) -> list[str]:
    return [d.doc_ref for d in page]


def organize(documents, **kwargs) -> tuple[list[str], int]:
    page, total = organize_finder(documents, **kwargs)
    return refs(page), total


# -- empty input -------------------------------------------------------------------------------


def test_empty_input_gives_empty_page_and_zero_total():
    assert organize_finder([]) == ([], 0)
    assert organize([], keywords=["x"], file_type="pdf", history=calls("a"), offset=5, limit=1) == ([], 0)


# -- keywords ----------------------------------------------------------------------------------

CORPUS = [
    doc("annual", title="2026 年度报告", keywords=["财务", "年报"], summary="Finance and operations report"),
    doc("contract", title="A1 合同", keywords=["合同", "Legal"], summary="Service contract"),
    doc("slides", title="Roadmap", keywords=None, summary=None),
    doc("notes", title="Meeting notes", keywords=["Weekly"], summary="Decisions of the week"),
]


def test_keyword_matches_title():
    assert organize(CORPUS, keywords=["Roadmap"]) == (["slides"], 1)


def test_keyword_matches_one_of_the_documents_keywords():
    assert organize(CORPUS, keywords=["年报"]) == (["annual"], 1)


def test_keyword_matches_summary():
    assert organize(CORPUS, keywords=["decisions"]) == (["notes"], 1)


def test_keyword_match_is_a_case_insensitive_substring():
    assert organize(CORPUS, keywords=["LEGAL"]) == (["contract"], 1)
    assert organize(CORPUS, keywords=["roadm"]) == (["slides"], 1)
    assert organize(CORPUS, keywords=["REPORT"]) == (["annual"], 1)


def test_any_keyword_hit_keeps_a_document():
    assert organize(CORPUS, keywords=["weekly", "合同", "absent"]) == (["contract", "notes"], 2)


def test_keyword_without_hit_leaves_nothing():
    assert organize(CORPUS, keywords=["nowhere"]) == ([], 0)


def test_keywords_do_not_match_across_keyword_boundaries():
    assert organize(CORPUS, keywords=["财务 年报"]) == ([], 0)


def test_no_keywords_or_an_empty_keyword_means_no_keyword_filter():
    everything = (["annual", "contract", "slides", "notes"], 4)
    assert organize(CORPUS, keywords=None) == everything
    assert organize(CORPUS, keywords=[]) == everything
    assert organize(CORPUS, keywords=[""]) == everything


def test_a_single_string_is_one_keyword():
    assert organize(CORPUS, keywords="roadmap") == (["slides"], 1)


# -- file type ---------------------------------------------------------------------------------

TYPED = [doc("a", file_type="pdf"), doc("b", file_type="xlsx"), doc("c", file_type="pdf"), doc("d", file_type="PDF")]


def test_file_type_matches_exactly():
    assert organize(TYPED, file_type="pdf") == (["a", "c"], 2)
    assert organize(TYPED, file_type="xlsx") == (["b"], 1)


def test_file_type_without_match_gives_empty():
    assert organize(TYPED, file_type="pptx") == ([], 0)
    assert organize(TYPED, file_type="pd") == ([], 0)


def test_empty_file_type_means_no_filter():
    assert organize(TYPED, file_type="") == (["a", "b", "c", "d"], 4)


def test_keywords_and_file_type_combine():
    docs = [
        doc("r1", file_type="pdf", title="report"),
        doc("r2", file_type="xlsx", title="report"),
        doc("x", file_type="pdf"),
    ]
    assert organize(docs, keywords=["report"], file_type="xlsx") == (["r2"], 1)


# -- invalid documents ---------------------------------------------------------------------------


def test_documents_whose_uri_is_not_a_document_dpe_uri_are_skipped(caplog):
    docs = [
        doc("ok"),
        doc("window", uri="window://docs/window"),
        doc("broken", uri="dpe://docs/x?limit=0"),
        doc("catalogue", uri="dpe://docs"),
        doc("page", uri="dpe://docs/p/pages/0"),
        doc("query", uri="dpe://docs/q?format=json"),
    ]
    with caplog.at_level(logging.WARNING, logger="smcp_sync.context.finder_order"):
        assert organize(docs) == (["ok", "query"], 2)
    assert "rule 7: limit" in caplog.text and "not a document" in caplog.text


# -- server priority ---------------------------------------------------------------------------

SERVERS = [doc("d1", "delta"), doc("a1", "alpha"), doc("c1", "charlie"), doc("b1", "bravo"), doc("a2", "alpha")]


def test_servers_without_history_are_in_name_order():
    assert organize(SERVERS) == (["a1", "a2", "b1", "c1", "d1"], 5)


def test_most_recently_used_server_comes_first():
    history = calls("bravo", "delta", "bravo", "unused")
    assert organize(SERVERS, history=history) == (["b1", "d1", "a1", "a2", "c1"], 5)


# -- last_modified -----------------------------------------------------------------------------


def test_within_a_server_newest_first_and_missing_last():
    docs = [
        doc("none"),
        doc("jan", last_modified="2026-01-15T08:30:00Z"),
        doc("garbage", last_modified="yesterday"),
        doc("feb", last_modified="2026-02-01T14:00:00Z"),
        doc("dec", last_modified="2025-12-31T23:59:59Z"),
        doc("empty", last_modified=""),
    ]
    assert organize(docs) == (["feb", "jan", "dec", "none", "garbage", "empty"], 6)


def test_last_modified_compares_instants_not_strings():
    docs = [
        doc("tokyo-9h", last_modified="2026-01-15T09:00:00+09:00"),  # 00:00 UTC
        doc("utc-1h", last_modified="2026-01-15T01:00:00Z"),
        doc("naive-0h30", last_modified="2026-01-15T00:30:00"),  # no offset: UTC
        doc("fraction", last_modified="2026-01-15T01:00:00.500Z"),
        doc("date-only", last_modified="2026-01-14"),
    ]
    assert organize(docs) == (["fraction", "utc-1h", "naive-0h30", "tokyo-9h", "date-only"], 5)


def test_equal_times_keep_input_order():
    same = "2026-01-01T00:00:00Z"
    docs = [
        doc("x", last_modified=same),
        doc("y", last_modified="2026-01-01T01:00:00+01:00"),  # the same instant
        doc("z", last_modified=same),
    ]
    assert organize(docs) == (["x", "y", "z"], 3)


def test_server_order_wins_over_recency():
    docs = [
        doc("old-a", "a", last_modified="2020-01-01T00:00:00Z"),
        doc("new-b", "b", last_modified="2026-01-01T00:00:00Z"),
        doc("undated-a", "a"),
        doc("newer-a", "a", last_modified="2021-01-01T00:00:00Z"),
    ]
    assert organize(docs) == (["newer-a", "old-a", "undated-a", "new-b"], 4)
    assert organize(docs, history=calls("b")) == (["new-b", "newer-a", "old-a", "undated-a"], 4)


# -- paging ------------------------------------------------------------------------------------

TWENTY_FIVE = [doc(f"d{i:02}", last_modified=f"2026-01-{i + 1:02}T00:00:00Z") for i in range(25)]
NEWEST_FIRST = [f"d{i:02}" for i in range(24, -1, -1)]


def test_default_page_is_the_first_twenty():
    assert organize(TWENTY_FIVE) == (NEWEST_FIRST[:20], 25)


def test_offset_and_limit_select_a_page():
    assert organize(TWENTY_FIVE, offset=20, limit=10) == (NEWEST_FIRST[20:], 25)
    assert organize(TWENTY_FIVE, offset=3, limit=2) == (NEWEST_FIRST[3:5], 25)


def test_offset_beyond_the_end_gives_an_empty_page_with_the_total():
    assert organize(TWENTY_FIVE, offset=25) == ([], 25)
    assert organize(TWENTY_FIVE, offset=1000, limit=100) == ([], 25)


def test_limit_larger_than_total_gives_everything():
    assert organize(TWENTY_FIVE, limit=100) == (NEWEST_FIRST, 25)


def test_total_count_counts_filtered_documents_not_the_page():
    docs = TWENTY_FIVE + [doc("other", file_type="xlsx")]
    assert organize(docs, file_type="pdf", offset=24, limit=5) == (["d00"], 25)
    assert organize(docs, file_type="xlsx", limit=1) == (["other"], 1)


@pytest.mark.parametrize(("field", "kwargs", "expected"), [
    ("limit", {"limit": 0}, "limit must be an integer in [1, 100], got 0"),
    ("limit", {"limit": 101}, "limit must be an integer in [1, 100], got 101"),
    ("limit", {"limit": -1}, "limit must be an integer in [1, 100], got -1"),
    ("limit", {"limit": True}, "limit must be an integer in [1, 100], got True"),
    ("offset", {"offset": -1}, "offset must be an integer >= 0, got -1"),
    ("offset", {"offset": 1.5}, "offset must be an integer >= 0, got 1.5"),
])  # fmt: skip
def test_out_of_range_paging_is_a_bad_request_naming_the_field(field, kwargs, expected):
    with pytest.raises(BadRequestError) as caught:
        organize_finder(TWENTY_FIVE, **kwargs)
    assert caught.value.code == 400
    assert caught.value.message == expected
    assert caught.value.details == {"field": field}


def test_paging_bounds_are_inclusive():
    assert organize(TWENTY_FIVE, limit=1) == (NEWEST_FIRST[:1], 25)
    assert organize(TWENTY_FIVE, offset=0, limit=100) == (NEWEST_FIRST, 25)


# -- everything at once -------------------------------------------------------------------------


def test_filter_order_and_page_together():
    docs = [
        doc("a-old", "alpha", title="Budget 2020", last_modified="2020-05-01T00:00:00Z"),
        doc("a-new", "alpha", title="Budget 2026", last_modified="2026-05-01T00:00:00Z"),
        doc("b-mid", "bravo", title="budget review", last_modified="2023-05-01T00:00:00Z"),
        doc("b-none", "bravo", keywords=["BUDGET"]),
        doc("b-skip", "bravo", title="Holiday plan"),
        doc("c-xls", "charlie", title="budget", file_type="xlsx"),
        doc("bad", "bravo", title="budget", uri="dpe://"),
    ]
    kwargs = {"keywords": ["budget"], "file_type": "pdf", "history": calls("alpha", "bravo")}
    assert organize(docs, **kwargs) == (["b-mid", "b-none", "a-new", "a-old"], 4)
    assert organize(docs, **kwargs, offset=1, limit=2) == (["b-none", "a-new"], 4)


# -- precomputed catalogue entries -----------------------------------------------------------


def test_catalogue_entries_organise_exactly_as_the_summaries_do():
    docs = [*TWENTY_FIVE, doc("Budget", server="alpha", keywords=["FINANCE"]), doc("undated", last_modified="soon")]
    entries = [catalogue_entry(d) for d in docs]
    for kwargs in ({}, {"keywords": ["finance"]}, {"offset": 20, "limit": 10}, {"history": calls("docs")}):
        assert organize_catalogue(entries, **kwargs) == organize_finder(docs, **kwargs)
    assert entries[-2].folded_texts == ("budget", "finance", "")
    with pytest.raises(BadRequestError, match="limit"):
        organize_catalogue(entries, limit=0)


def test_a_catalogue_entry_needs_a_document_uri():
    with pytest.raises(InvalidURIError, match="not a document"):
        catalogue_entry(doc("page", uri="dpe://docs/p/pages/0"))
    with pytest.raises(InvalidURIError):
        catalogue_entry(doc("broken", uri="dpe://docs/x?limit=0"))
