"""The Finder end to end, read-only: Server, Computer and Agent with the example documents
server on a copy of the sample folder and the test resource server as a second `dpe://`
server ("notes"). The seed's whole navigation (Level 0 → 3), the catalogue's filters,
order and paging, completion, and the Finder errors reaching the Agent typed.

One office serves the whole module (no test changes it: no tool calls, no file edits)."""

from __future__ import annotations

from typing import Iterator

import pytest

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer
from smcp_sync.context import render_markdown, render_text
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BadRequestError, FinderError, InvalidURIError
from smcp_sync.protocol.models import Completion, DPEDocument, DPEElementDetail, DPEPage

from .helpers import (
    DESIGN,
    DOCS_HOST,
    MEETING,
    MTIMES,
    NOTES_HOST,
    RELEASE,
    REPORT,
    SALES,
    SLUGS,
    copy_samples,
    doc_ref,
    doc_uri,
    documents_config,
    note,
    office,
    resource_config,
)

pytestmark = pytest.mark.timeout(60)

WEEKLY_PAGE = {
    "page_index": 0,
    "title": "Week 18",
    "uri": f"dpe://{NOTES_HOST}/weekly/pages/0",
    "element_count": 2,
    "elements": [
        {"element_id": "h-1", "category": "heading", "content": {"level": 2, "text": "Week 18"}},
        {"element_id": "l-1", "category": "list", "content": {"ordered": False, "items": ["ship 1.4", "review"]}},
    ],
}
NOTES = [  # listed in this order; the catalogue orders them weekly, retro, undated
    note("undated", "Reading list", "txt", summary="Books and papers to read"),
    note("weekly", "Weekly notes", "md", "2026-05-01T08:00:00Z", keywords=["weekly", "团队"], summary="Team notes"),
    note("retro", "Retrospective", "md", "2025-12-01T08:00:00Z", summary="What went well in the architecture review"),
    {  # a server that ignores `format`: JSON where Markdown is asked for
        "uri": f"dpe://{NOTES_HOST}/weekly/pages/0?format=markdown",
        "listed": False,
        "mimeType": "application/json",
        "json": WEEKLY_PAGE,
    },
    *(  # the Finder guide's way: the JSON-RPC error code is the Finder code
        {"uri": uri, "listed": False, "error": {"code": code, "message": message, "data": data}}
        for uri, code, message, data in (
            (f"dpe://{NOTES_HOST}/archived", 4201, "document 'archived' was archived", {"doc_ref": "archived"}),
            (f"dpe://{NOTES_HOST}/weekly/pages/7", 4202, "page 7 is past the end (1 page)",
             {"page_index": 7, "page_count": 1}),
            (f"dpe://{NOTES_HOST}/weekly/elements/h-9", 4203, "no element h-9 in weekly", {"element_id": "h-9"}),
            (f"dpe://{NOTES_HOST}/weekly/elements/L~1", 4204, "element ids here are [a-z]-digits", None),
        )
    ),
]
DOCS_ORDER = [doc_uri(name) for name in MTIMES]  # newest first
NOTES_ORDER = [f"dpe://{NOTES_HOST}/{doc}" for doc in ("weekly", "retro", "undated")]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Computer, Agent]]:
    root = tmp_path_factory.mktemp("finder-reading")
    servers = [documents_config(copy_samples(root / "documents")), resource_config("notes", root / "notes.json", NOTES)]
    with office(servers) as started:
        yield started


@pytest.fixture
def agent(shared: tuple[Computer, Agent]) -> Agent:
    """The module's Agent. No per-test leak check here: the module's Server and Computer
    keep idle handler threads in their worker pools between tests by design; everything
    is closed (and those pools joined) when `office` exits."""
    return shared[1]


# -- navigation, Level 0 to 3 -------------------------------------------------------------------


def test_the_seeds_navigation_from_the_catalogue_to_an_element(agent: Agent) -> None:
    # Step 1: the catalogue (client:get_finder); each entry has page_count and the uri to open
    finder = agent.get_finder("c1", file_type="md", keywords=["经营"], timeout=10)
    [entry] = finder.documents
    assert (entry.title, entry.page_count, entry.server, entry.uri) == ("2026 年第一季度经营报告", 6, "docs", doc_uri(REPORT))
    assert entry.last_modified == MTIMES[REPORT] and entry.doc_ref == doc_ref(REPORT, SLUGS[REPORT])

    # Level 0 through read_resource: the MCP server's own catalogue, as parsed JSON
    catalogue = agent.read_resource("c1", f"dpe://{DOCS_HOST}", timeout=10)
    assert catalogue["total_count"] == 5 and [d["uri"] for d in catalogue["documents"]] == DOCS_ORDER

    # Step 2: Level 1, metadata, then the page index (depth=pages) with paging
    document = agent.read_document("c1", entry, timeout=10)
    assert isinstance(document, DPEDocument) and document.to_summary("docs") == entry and document.pages is None
    indexed = agent.read_document_pages("c1", entry.uri, timeout=10)
    assert [(p.page_index, p.title, p.element_count) for p in indexed.pages] == [
        (0, "2026 年第一季度经营报告", 2), (1, "经营概览", 4), (2, "收入分析", 3),
        (3, "成本与费用", 3), (4, "重点项目进展", 2), (5, "下季度计划", 2),
    ]  # fmt: skip
    paged = agent.read_document_pages("c1", entry.uri, offset=2, limit=3, timeout=10)
    assert [p.page_index for p in paged.pages] == [2, 3, 4]
    assert (paged.page_offset, paged.page_limit, paged.page_total) == (2, 3, 6)
    assert agent.read_document_pages("c1", entry.uri, offset=6, timeout=10).pages == []

    # Step 3: Level 2, the page the index points to, whole, filtered, as Markdown and text
    page = agent.read_page("c1", entry, indexed.pages[2].page_index, timeout=10)
    assert isinstance(page, DPEPage) and page.uri == indexed.pages[2].uri
    assert [(e.element_id, e.category) for e in page.elements] == [
        ("h-003", "heading"), ("tbl-001", "table"), ("txt-004", "text"),
    ]  # fmt: skip
    tables = agent.read_page("c1", entry, 2, categories=["table", "pivot_table"], timeout=10)
    assert [e.element_id for e in tables.elements] == ["tbl-001"] and tables.element_count == 3
    markdown = agent.read_page("c1", entry, 2, format="markdown", timeout=10)
    assert markdown == render_markdown(page)  # the server's rendering, the same rules
    assert markdown.startswith("## 收入分析\n\n| 月份 | 收入（万元） | 环比 | 同比 |\n| --- | --- | --- | --- |\n")
    only_tables = agent.read_page("c1", entry, 2, format="markdown", categories=["table"], timeout=10)
    assert only_tables.startswith("| 月份 |") and "## 收入分析" not in only_tables
    assert agent.read_page("c1", entry, 2, format="text", timeout=10) == render_text(page)

    # Step 4: Level 3, the element in full
    element = agent.read_element("c1", entry, "tbl-001", timeout=10)
    assert isinstance(element, DPEElementDetail) and element.page_index == 2
    assert element.content["rows"][3] == ["合计", "4,180", "—", "+14.6%"]
    assert (element.content["total_rows"], element.content["total_columns"]) == (4, 4)
    assert element.metadata == {"source_lines": "18-23"}
    code = agent.read_element("c1", doc_uri(DESIGN), "code-001", format="markdown", timeout=10)
    assert code.splitlines()[0] == "```python" and code.splitlines()[-1] == "```"


def test_every_page_of_every_sample_document_reads_and_renders(agent: Agent) -> None:
    for entry in agent.get_finder("c1", timeout=10).documents[:5]:
        assert entry.server == "docs"
        for index in range(entry.page_count):
            page = agent.read_page("c1", entry, index, timeout=10)
            assert page.page_index == index and page.element_count == len(page.elements) > 0
            assert agent.read_page("c1", entry, index, format="markdown", timeout=10).strip()


def test_markdown_is_rendered_by_the_agent_when_a_server_answers_json(agent: Agent) -> None:
    rendered = agent.read_page("c1", f"dpe://{NOTES_HOST}/weekly", 0, format="markdown", timeout=10)
    assert rendered == "## Week 18\n\n- ship 1.4\n- review"


def test_completion_walks_doc_ref_page_index_element_id(agent: Agent) -> None:
    pages = f"dpe://{DOCS_HOST}/{{doc_ref}}/pages/{{page_index}}"
    elements = f"dpe://{DOCS_HOST}/{{doc_ref}}/elements/{{element_id}}"
    report = doc_ref(REPORT, SLUGS[REPORT])

    only_report = Completion(values=[report], total=1, has_more=False)
    assert agent.complete("c1", pages, "doc_ref", "2026", timeout=10) == only_report
    assert agent.complete("c1", pages, "page_index", context={"doc_ref": report}, timeout=10).values == list("012345")
    chosen = {"doc_ref": report, "page_index": 2}
    assert agent.complete("c1", elements, "element_id", "", context=chosen, timeout=10).values == [
        "h-003", "tbl-001", "txt-004",
    ]  # fmt: skip
    with pytest.raises(FinderError) as unknown:
        agent.complete("c1", pages, "page_index", context={"doc_ref": "nope"}, timeout=10)
    assert unknown.value.code == 4201


def test_get_resources_lists_each_servers_documents(agent: Agent) -> None:
    docs = agent.get_resources("c1", "docs", timeout=10)
    assert sorted(r.uri for r in docs.resources) == sorted(DOCS_ORDER) and docs.next_cursor is None
    notes = agent.get_resources("c1", "notes", timeout=10)
    assert [r.uri for r in notes.resources] == [f"dpe://{NOTES_HOST}/{doc}" for doc in ("undated", "weekly", "retro")]


# -- the catalogue ---------------------------------------------------------------------------------


def uris(agent: Agent, **query) -> tuple[list[str], int]:
    finder = agent.get_finder("c1", timeout=10, **query)
    return [d.uri for d in finder.documents], finder.total_count


def test_servers_by_name_then_newest_first_and_undated_last(agent: Agent) -> None:
    assert uris(agent) == (DOCS_ORDER + NOTES_ORDER, 8)
    servers = [d.server for d in agent.get_finder("c1", timeout=10).documents]
    assert servers == ["docs"] * 5 + ["notes"] * 3


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        (["reading LIST"], [NOTES_ORDER[2]]),  # a title
        (["经营概览"], [doc_uri(REPORT)]),  # one of the keywords
        (["private event loop"], [doc_uri(DESIGN)]),  # a summary
        (["architecture"], [doc_uri(DESIGN), NOTES_ORDER[1]]),  # keywords of one, summary of another
        (["reading list", "经营概览", "no such word"], [doc_uri(REPORT), NOTES_ORDER[2]]),  # any keyword hits
        (["no such word"], []),
    ],
)
def test_keywords_match_title_keywords_or_summary(agent: Agent, keywords: list[str], expected: list[str]) -> None:
    assert uris(agent, keywords=keywords) == (expected, len(expected))


def test_file_type_matches_exactly(agent: Agent) -> None:
    assert uris(agent, file_type="csv") == ([doc_uri(SALES)], 1)
    assert uris(agent, file_type="txt") == ([doc_uri(RELEASE), NOTES_ORDER[2]], 2)
    md = [doc_uri(REPORT), doc_uri(DESIGN), doc_uri(MEETING), NOTES_ORDER[0], NOTES_ORDER[1]]
    assert uris(agent, file_type="md") == (md, 5)
    assert uris(agent, file_type="MD") == ([], 0) and uris(agent, file_type="m") == ([], 0)


def test_offset_and_limit_page_after_filtering(agent: Agent) -> None:
    everything = DOCS_ORDER + NOTES_ORDER
    assert uris(agent, limit=3) == (everything[:3], 8)
    assert uris(agent, offset=6, limit=5) == (everything[6:], 8)
    assert uris(agent, offset=7, limit=1) == (everything[7:], 8)
    assert uris(agent, offset=8) == ([], 8) and uris(agent, offset=10**6, limit=100) == ([], 8)
    assert uris(agent, file_type="md", offset=1, limit=2) == ([doc_uri(DESIGN), doc_uri(MEETING)], 5)


def test_the_computer_refuses_bad_paging_too(agent: Agent) -> None:
    """The Agent checks before sending; a peer that does not is answered 400 by the Computer."""
    for field, value in (("offset", -1), ("limit", 0), ("limit", 101)):
        request = {"agent": "a1", "req_id": f"raw-{field}-{value}", "computer": "c1", field: value}
        with pytest.raises(BadRequestError) as refused:
            agent._connection.call(events.GET_FINDER, request, 10)
        assert field in refused.value.message and str(value) in refused.value.message


# -- errors ------------------------------------------------------------------------------------------


def test_finder_errors_reach_the_agent_typed(agent: Agent) -> None:
    report = doc_ref(REPORT, SLUGS[REPORT])
    with pytest.raises(FinderError) as no_document:
        agent.read_document("c1", f"dpe://{DOCS_HOST}/nope", timeout=10)
    assert no_document.value.code == 4201 and no_document.value.details["doc_ref"] == "nope"

    with pytest.raises(FinderError) as no_page:
        agent.read_page("c1", doc_uri(REPORT), 6, timeout=10)
    assert no_page.value.code == 4202
    assert (no_page.value.details["page_index"], no_page.value.details["page_count"]) == (6, 6)
    assert "page 6 is out of range" in no_page.value.message and report in no_page.value.message

    with pytest.raises(FinderError) as no_element:
        agent.read_element("c1", doc_uri(REPORT), "tbl-999", timeout=10)
    assert no_element.value.code == 4203 and no_element.value.details["element_id"] == "tbl-999"

    with pytest.raises(FinderError) as no_server:
        agent.read_document("c1", "dpe://com.example.nowhere/x", timeout=10)
    assert no_server.value.code == 4201 and "no MCP server of this computer lists dpe://com.example.nowhere" in (
        no_server.value.message
    )


@pytest.mark.parametrize(
    "read, code, message, details",
    [
        (lambda agent: agent.read_document("c1", f"dpe://{NOTES_HOST}/archived", timeout=10), 4201,
         "document 'archived' was archived", {"doc_ref": "archived"}),
        (lambda agent: agent.read_page("c1", f"dpe://{NOTES_HOST}/weekly", 7, timeout=10), 4202,
         "page 7 is past the end (1 page)", {"page_index": 7, "page_count": 1}),
        (lambda agent: agent.read_element("c1", f"dpe://{NOTES_HOST}/weekly", "h-9", timeout=10), 4203,
         "no element h-9 in weekly", {"element_id": "h-9"}),
        (lambda agent: agent.read_element("c1", f"dpe://{NOTES_HOST}/weekly", "L~1", timeout=10), 4204,
         "element ids here are [a-z]-digits", {}),
    ],
    ids=["4201", "4202", "4203", "4204"],
)  # fmt: skip
def test_a_json_rpc_error_with_a_finder_code_reaches_the_agent_as_that_code(agent, read, code, message, details):
    with pytest.raises(FinderError) as failed:
        read(agent)
    assert (failed.value.code, failed.value.message) == (code, message)
    assert failed.value.details == {**details, "mcp_server": "notes"}  # the server's own details, and which server


def test_a_server_that_only_says_not_found_gets_the_code_of_the_level(agent: Agent) -> None:
    for read, code in (
        (lambda: agent.read_document("c1", f"dpe://{NOTES_HOST}/missing", timeout=10), 4201),
        (lambda: agent.read_page("c1", f"dpe://{NOTES_HOST}/weekly", 3, timeout=10), 4202),
        (lambda: agent.read_element("c1", f"dpe://{NOTES_HOST}/weekly", "x-1", timeout=10), 4203),
    ):
        with pytest.raises(FinderError) as failed:
            read()
        assert failed.value.code == code


def test_an_invalid_dpe_uri_is_4204_from_the_agent_and_from_the_computer(agent: Agent) -> None:
    bad = f"{doc_uri(REPORT)}/pages/0?format=html"
    with pytest.raises(InvalidURIError) as local:
        agent.read_resource("c1", bad, timeout=10)
    request = {"agent": "a1", "req_id": "raw-4204", "computer": "c1", "uri": bad}
    with pytest.raises(InvalidURIError) as remote:  # what a peer that does not check gets
        agent._connection.call(events.READ_RESOURCE, request, 10)
    for error in (local.value, remote.value):
        assert error.code == 4204 and "rule 4: format must be one of json, markdown, text, got 'html'" in error.message
