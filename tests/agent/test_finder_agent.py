"""The Agent's Finder and resource API against the real `SMCPServer`, with the Computer
played by a scripted connection that answers `client:get_finder`, `client:read_resource`,
`client:get_resources` and `client:complete` from a table. What is pinned down here: the
exact requests the Agent sends, how it decodes every kind of answer (JSON, Markdown, blobs,
JSON where Markdown was asked for, malformed), the typed Finder errors, local URI checks,
and the finder cache. The real Computer and MCP servers are in tests/context_end_to_end/."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import attrs
import pytest
from office_parts import joined_agent

from smcp_sync.agent import Agent
from smcp_sync.context import render_markdown, render_text
from smcp_sync.protocol import events
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.errors import BadRequestError, FinderError, InternalError, InvalidURIError, SMCPError
from smcp_sync.protocol.models import (
    Completion,
    DPEDocument,
    DPEDocumentSummary,
    DPEElementDetail,
    DPEPage,
    DPEPageSummary,
    GetFinderRet,
    GetResourcesRet,
    PromptReference,
    Resource,
    TextResourceContents,
    UpdateComputerConfigReq,
)

from .recorder import Timeline
from .scripted_computer import ScriptedComputer

pytestmark = pytest.mark.timeout(30)

OFFICE = "office-finder"
HOST = "com.example.docs"
DOC = f"dpe://{HOST}/rpt-2026"

METADATA = DPEDocument(
    doc_ref="rpt-2026",
    uri=DOC,
    file_uri="file:///data/rpt.xlsx",
    file_type="xlsx",
    title="2026 年度报告",
    page_count=12,
    keywords=["财务", "年报"],
    summary="2026 年度财务与运营报告",
    last_modified="2026-01-15T08:30:00Z",
)
TABLE = DPEElementDetail(
    element_id="tbl-001",
    category="table",
    summary="季度收入对比表",
    content={"headers": ["季度", "收入"], "rows": [["Q1", "1,250"], ["Q2", "1,380"]]},
)
PAGE = DPEPage(
    page_index=0,
    title="概览",
    uri=f"{DOC}/pages/0",
    doc_ref="rpt-2026",
    elements=[
        DPEElementDetail(element_id="h-001", category="heading", content={"level": 1, "text": "年度总结"}),
        TABLE,
    ],
    element_count=2,
)
SUMMARY = METADATA.to_summary("docs")


def json_contents(uri: str, model: Any, mime_type: str | None = "application/json") -> dict:
    return {"contents": [to_wire(TextResourceContents(uri=uri, text=json.dumps(to_wire(model)), mime_type=mime_type))]}


def text_contents(uri: str, text: str, mime_type: str | None) -> dict:
    return {"contents": [to_wire(TextResourceContents(uri=uri, text=text, mime_type=mime_type))]}


class FinderComputer(ScriptedComputer):
    """Answers the Finder and resource events from `answers` (uri -> answer dict or the
    `SMCPError` to answer with); records every request in `received`."""

    def __init__(self, name: str = "c1"):
        super().__init__(name)
        self.answers: dict[str, Any] = {}
        self.catalogue = GetFinderRet(documents=[SUMMARY], total_count=1, req_id="")
        self.finder_requests = 0
        on = self.connection.on
        on(events.GET_FINDER, self._record(events.GET_FINDER, self._get_finder))
        on(events.READ_RESOURCE, self._record(events.READ_RESOURCE, self._read_resource))
        on(events.GET_RESOURCES, self._record(events.GET_RESOURCES, self._get_resources))
        on(events.COMPLETE, self._record(events.COMPLETE, self._complete))

    def requests(self, event: str) -> list[dict]:
        with self.changed:
            return [payload for name, payload in self.received if name == event]

    def _get_finder(self, payload: dict) -> dict:
        self.finder_requests += 1
        return {**to_wire(self.catalogue), "req_id": payload["req_id"]}

    def _read_resource(self, payload: dict) -> dict:
        answer = self.answers.get(payload["uri"])
        if answer is None:
            raise FinderError(f"no scripted answer for {payload['uri']}", code=4201, details={"uri": payload["uri"]})
        if isinstance(answer, SMCPError):
            raise answer
        return {**answer, "req_id": payload["req_id"]}

    def _get_resources(self, payload: dict) -> dict:
        page = {None: (["a", "b"], "next-1"), "next-1": (["c"], None)}[payload.get("cursor")]
        resources = [Resource(uri=f"{DOC}-{n}", name=n, mime_type="application/json") for n in page[0]]
        return {"resources": to_wire(resources), "next_cursor": page[1], "req_id": payload["req_id"]}

    def _complete(self, payload: dict) -> dict:
        prefix = payload["argument"]["value"]
        values = [v for v in ("rpt-2025", "rpt-2026", "contract-a1") if v.startswith(prefix)]
        return {"completion": {"values": values, "total": len(values), "hasMore": False}, "req_id": payload["req_id"]}


@pytest.fixture
def computer(server):
    scripted = FinderComputer("c1").start(server.url, OFFICE)
    yield scripted
    scripted.close()


@pytest.fixture
def agent(server, computer):
    with joined_agent("a1", server.url, OFFICE, timeout=5) as joined:
        yield joined


# -- the catalogue ----------------------------------------------------------------------------


def test_get_finder_sends_the_filters_and_returns_the_catalogue(agent, computer):
    finder = agent.get_finder("c1", timeout=5)
    assert isinstance(finder, GetFinderRet) and finder.total_count == 1
    assert finder.documents == [SUMMARY] and isinstance(finder.documents[0], DPEDocumentSummary)
    assert finder.documents[0].server == "docs" and finder.documents[0].uri == DOC

    agent.get_finder("c1", keywords=("财务", "report"), file_type="xlsx", offset=20, limit=100, timeout=5)
    plain, filtered = computer.requests(events.GET_FINDER)
    assert plain == {"agent": "a1", "req_id": plain["req_id"], "computer": "c1", "offset": 0, "limit": 20}
    assert filtered == {
        "agent": "a1",
        "req_id": filtered["req_id"],
        "computer": "c1",
        "keywords": ["财务", "report"],
        "file_type": "xlsx",
        "offset": 20,
        "limit": 100,
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"offset": -1}, "offset must be an integer >= 0, got -1"),
        ({"offset": 1.5}, "offset must be an integer >= 0, got 1.5"),
        ({"limit": 0}, "limit must be an integer in 1–100, got 0"),
        ({"limit": 101}, "limit must be an integer in 1–100, got 101"),
        ({"limit": True}, "limit must be an integer in 1–100, got True"),
        ({"keywords": "finance"}, "keywords must be a list of strings; wrap a single one in a list: ['finance']"),
        ({"keywords": ["ok", 3]}, "keywords must be a list of strings, got ['ok', 3]"),
        ({"keywords": 3}, "keywords must be a list of strings, got 3"),
        ({"file_type": [".pdf"]}, "file_type must be a string such as 'pdf', not ['.pdf']"),
    ],
)
def test_bad_catalogue_arguments_are_refused_before_sending(agent, computer, kwargs, message):
    with pytest.raises(BadRequestError) as refused:
        agent.get_finder("c1", timeout=5, **kwargs)
    assert refused.value.code == 400 and refused.value.message == message
    assert computer.requests(events.GET_FINDER) == []


# -- read_resource ----------------------------------------------------------------------------


def test_read_resource_parses_json_and_keeps_text_and_decodes_blobs(agent, computer):
    computer.answers[DOC] = json_contents(DOC, METADATA)
    log = "window://com.example.log"
    computer.answers[log] = text_contents(log, "[10:30] INFO done", "text/plain")
    blob = base64.b64encode(b"\x89PNG\x00").decode()
    computer.answers["file:///logo.png"] = {
        "contents": [
            {"uri": "file:///logo.png", "blob": blob, "mimeType": "image/png"},
            {"uri": "file:///logo.txt", "text": "alt"},
        ]
    }

    assert agent.read_resource("c1", DOC, timeout=5) == to_wire(METADATA)
    assert agent.read_resource("c1", "window://com.example.log", timeout=5) == "[10:30] INFO done"
    assert agent.read_resource("c1", "file:///logo.png", mcp_server="files", timeout=5) == [b"\x89PNG\x00", "alt"]

    sent = computer.requests(events.READ_RESOURCE)
    assert [(r["uri"], r.get("mcp_server")) for r in sent] == [
        (DOC, None),
        ("window://com.example.log", None),
        ("file:///logo.png", "files"),
    ]
    assert sent[0] == {"agent": "a1", "req_id": sent[0]["req_id"], "computer": "c1", "uri": DOC}

    [content] = agent.read_resource_contents("c1", DOC, timeout=5)
    assert isinstance(content, TextResourceContents) and content.mime_type == "application/json"


def test_contents_labelled_json_that_are_not_are_a_500(agent, computer):
    computer.answers[DOC] = text_contents(DOC, "not json {", "application/json; charset=utf-8")
    with pytest.raises(InternalError) as bad:
        agent.read_resource("c1", DOC, timeout=5)
    assert bad.value.code == 500 and bad.value.message.startswith(f"{DOC!r} is labelled JSON but is not:")


@pytest.mark.parametrize(
    ("uri", "error", "fragment"),
    [
        ("dpe://", InvalidURIError, "invalid dpe URI 'dpe://'"),
        (f"{DOC}/pages/-1", InvalidURIError, "rule 3: page index"),
        (f"{DOC}?format=html", InvalidURIError, "rule 4: format must be one of json, markdown, text, got 'html'"),
        (f"{DOC}?limit=101", InvalidURIError, "rule 7: limit"),
        (f"{DOC}/pages/0?categories=table,spreadsheet", InvalidURIError, "rule 8: categories ['spreadsheet']"),
        ("window://com.example.log?priority=101", BadRequestError, "rule 3: priority"),
        ("", BadRequestError, "uri must be a non-empty string"),
    ],
)
def test_invalid_uris_are_refused_before_sending(agent, computer, uri, error, fragment):
    with pytest.raises(error) as refused:
        agent.read_resource("c1", uri, timeout=5)
    assert fragment in refused.value.message
    assert refused.value.code == (4204 if error is InvalidURIError else 400)
    assert computer.requests(events.READ_RESOURCE) == []


# -- navigation helpers -------------------------------------------------------------------------


def test_each_level_is_read_with_the_uri_of_the_spec(agent, computer):
    with_pages = attrs.evolve(
        METADATA,
        pages=[DPEPageSummary(page_index=2, title="收入分析", element_count=15, uri=f"{DOC}/pages/2")],
        page_offset=2,
        page_limit=1,
        page_total=12,
    )
    element = attrs.evolve(TABLE, doc_ref="rpt-2026", page_index=0, metadata={"source_range": "A1:C5"})
    computer.answers.update(
        {
            DOC: json_contents(DOC, METADATA),
            f"{DOC}?depth=pages&offset=2&limit=1": json_contents(DOC, with_pages),
            f"{DOC}/pages/0": json_contents(f"{DOC}/pages/0", PAGE),
            f"{DOC}/pages/0?categories=table,pivot_table": json_contents(f"{DOC}/pages/0", PAGE),
            f"{DOC}/elements/tbl-001": json_contents(f"{DOC}/elements/tbl-001", element),
        }
    )

    assert agent.read_document("c1", SUMMARY, timeout=5) == METADATA  # a catalogue entry
    assert agent.read_document("c1", f"{DOC}/pages/3?format=text", timeout=5) == METADATA  # any URI of the document
    document = agent.read_document_pages("c1", DOC, offset=2, limit=1, timeout=5)
    assert document == with_pages and document.pages[0].title == "收入分析" and document.page_total == 12
    assert agent.read_page("c1", METADATA, 0, timeout=5) == PAGE
    assert agent.read_page("c1", DOC, 0, categories=["table", "pivot_table"], timeout=5) == PAGE
    detail = agent.read_element("c1", DOC, "tbl-001", timeout=5)
    assert isinstance(detail, DPEElementDetail) and detail.metadata == {"source_range": "A1:C5"}

    assert [r["uri"] for r in computer.requests(events.READ_RESOURCE)] == [
        DOC,
        DOC,
        f"{DOC}?depth=pages&offset=2&limit=1",
        f"{DOC}/pages/0",
        f"{DOC}/pages/0?categories=table,pivot_table",
        f"{DOC}/elements/tbl-001",
    ]


def test_markdown_and_text_are_the_servers_or_rendered_here_from_json(agent, computer):
    page_md = f"{DOC}/pages/0?format=markdown"
    element_text = f"{DOC}/elements/tbl-001?format=text"
    computer.answers[page_md] = text_contents(page_md, "# 年度总结 (server)", "text/markdown")
    computer.answers[element_text] = json_contents(element_text, TABLE)  # a server that ignores `format`
    page = agent.read_page("c1", DOC, 0, format="markdown", timeout=5)
    assert page == "# 年度总结 (server)" and page._repr_markdown_() == page  # shown as Markdown in a notebook
    assert agent.read_element("c1", DOC, "tbl-001", format="text", timeout=5) == render_text(TABLE)

    computer.answers[page_md] = json_contents(page_md, PAGE, mime_type=None)  # unlabelled, but the JSON asked for
    rendered = agent.read_page("c1", DOC, 0, format="markdown", timeout=5)
    assert rendered == render_markdown(PAGE)
    assert rendered == "# 年度总结\n\n| 季度 | 收入 |\n| --- | --- |\n| Q1 | 1,250 |\n| Q2 | 1,380 |"

    computer.answers[page_md] = text_contents(page_md, "{braces} start this Markdown", None)
    assert agent.read_page("c1", DOC, 0, format="markdown", timeout=5) == "{braces} start this Markdown"


def test_an_answer_that_is_not_the_level_asked_for_is_a_500_naming_the_field(agent, computer):
    computer.answers[f"{DOC}/pages/0"] = json_contents(f"{DOC}/pages/0", METADATA)  # a document, not a page
    with pytest.raises(InternalError) as wrong:
        agent.read_page("c1", DOC, 0, timeout=5)
    assert wrong.value.message.startswith(f"the answer to {DOC}/pages/0 is not a DPEPage: invalid DPEPage:")
    assert "required field missing @ $.page_index" in wrong.value.message

    computer.answers[DOC] = text_contents(DOC, "# just Markdown", "text/markdown")
    with pytest.raises(InternalError, match=r"is not a DPEDocument: not JSON"):
        agent.read_document("c1", DOC, timeout=5)


@pytest.mark.parametrize(
    ("code", "error_type"),
    [(4201, FinderError), (4202, FinderError), (4203, FinderError), (4204, InvalidURIError)],
)
def test_finder_errors_arrive_typed_with_their_details(agent, computer, code, error_type):
    details = {"doc_ref": "rpt-2026", "page_index": 99, "page_count": 12}
    computer.answers[f"{DOC}/pages/99"] = SMCPError.for_code(code, f"scripted {code}", details)
    with pytest.raises(error_type) as failed:
        agent.read_page("c1", DOC, 99, timeout=5)
    assert (failed.value.code, failed.value.message, failed.value.details) == (code, f"scripted {code}", details)


def test_navigation_arguments_are_checked_before_sending(agent, computer):
    with pytest.raises(InvalidURIError, match=r"catalogue \(Level 0\) URI"):
        agent.read_document("c1", f"dpe://{HOST}", timeout=5)
    with pytest.raises(InvalidURIError, match="rule 3: page index"):
        agent.read_page("c1", DOC, -1, timeout=5)
    with pytest.raises(InvalidURIError, match="rule 4: format must be one of json, markdown, text, got 'html'"):
        agent.read_page("c1", DOC, 0, format="html", timeout=5)
    with pytest.raises(InvalidURIError, match="rule 8: categories"):
        agent.read_page("c1", DOC, 0, categories=["spreadsheet"], timeout=5)
    with pytest.raises(BadRequestError, match=r"categories must be a list of strings; wrap a single one in a list"):
        agent.read_page("c1", DOC, 0, categories="table", timeout=5)
    with pytest.raises(InvalidURIError, match="rule 7: limit"):
        agent.read_document_pages("c1", DOC, limit=0, timeout=5)
    with pytest.raises(InvalidURIError, match="rule 3: element id"):
        agent.read_element("c1", DOC, "", timeout=5)
    with pytest.raises(BadRequestError, match="expected a dpe:// URI or a document with a uri, not int"):
        agent.read_document("c1", 7, timeout=5)
    assert computer.requests(events.READ_RESOURCE) == []


def test_page_index_parameters_are_sent_only_when_not_the_defaults(agent, computer):
    computer.answers[f"{DOC}?depth=pages"] = json_contents(DOC, METADATA)
    computer.answers[f"{DOC}?depth=pages&limit=5"] = json_contents(DOC, METADATA)
    agent.read_document_pages("c1", DOC, timeout=5)
    agent.read_document_pages("c1", DOC, offset=0, limit=5, timeout=5)
    sent = [r["uri"] for r in computer.requests(events.READ_RESOURCE)]
    assert sent == [f"{DOC}?depth=pages", f"{DOC}?depth=pages&limit=5"]


# -- get_resources and complete --------------------------------------------------------------------


def test_get_resources_pages_through_an_mcp_servers_list(agent, computer):
    first = agent.get_resources("c1", "docs", timeout=5)
    assert isinstance(first, GetResourcesRet) and [r.name for r in first.resources] == ["a", "b"]
    second = agent.get_resources("c1", "docs", cursor=first.next_cursor, timeout=5)
    assert [r.uri for r in second.resources] == [f"{DOC}-c"] and second.next_cursor is None
    sent = computer.requests(events.GET_RESOURCES)
    assert [(r["mcp_server"], r.get("cursor")) for r in sent] == [("docs", None), ("docs", "next-1")]


def test_complete_sends_the_reference_argument_and_context(agent, computer):
    template = f"dpe://{HOST}/{{doc_ref}}/pages/{{page_index}}"
    completion = agent.complete("c1", template, "doc_ref", "rpt", timeout=5)
    assert completion == Completion(values=["rpt-2025", "rpt-2026"], total=2, has_more=False)

    agent.complete("c1", template, "page_index", context={"doc_ref": "rpt-2026", "page_index": 3}, timeout=5)
    agent.complete("c1", PromptReference(name="review"), "language", "py", mcp_server="prompts", timeout=5)
    first, second, third = computer.requests(events.COMPLETE)
    assert first == {
        "agent": "a1",
        "req_id": first["req_id"],
        "computer": "c1",
        "ref": {"type": "ref/resource", "uri": template},
        "argument": {"name": "doc_ref", "value": "rpt"},
    }
    assert second["argument"] == {"name": "page_index", "value": ""}
    assert second["context"] == {"arguments": {"doc_ref": "rpt-2026", "page_index": "3"}}
    assert third["ref"] == {"type": "ref/prompt", "name": "review"} and third["mcp_server"] == "prompts"

    with pytest.raises(BadRequestError, match="context argument 'page_index' must be a string"):
        agent.complete("c1", template, "element_id", context={"page_index": 1.5}, timeout=5)
    with pytest.raises(BadRequestError, match="ref must be a URI template string"):
        agent.complete("c1", {"uri": template}, "doc_ref", timeout=5)
    assert len(computer.requests(events.COMPLETE)) == 3


# -- notifications and the finder cache -----------------------------------------------------------


def test_update_finder_reaches_callbacks_and_refreshes_the_cache_only_with_prefetch(server, computer):
    for prefetch in (False, True):
        before = computer.finder_requests
        with Agent("a1", prefetch_finder=prefetch) as agent:
            timeline = Timeline()
            agent.on(events.UPDATE_FINDER_NOTIFICATION, timeline.notified)
            agent.on_cache_update(timeline.cache_updated)
            agent.connect(server.url, timeout=5)
            agent.join_office(OFFICE, timeout=5)
            agent.tool_cache.wait_for("c1", timeout=5)
            renamed = attrs.evolve(SUMMARY, title=f"v{prefetch}")
            computer.catalogue = GetFinderRet(documents=[renamed], total_count=1, req_id="")
            computer.connection.emit(events.UPDATE_FINDER, {"computer": "c1"})
            timeline.wait(lambda entries: ("notified", UpdateComputerConfigReq(computer="c1")) in entries)
            if prefetch:  # fetched on joining, and again after the update: two cache updates
                entries = timeline.wait(lambda entries: sum(e[:2] == ("finder", "c1") for e in entries) == 2)
                assert [e[2] for e in entries if e[:2] == ("finder", "c1")][-1].documents[0].title == "vTrue"
                assert computer.finder_requests - before == 2
                agent.get_finder("c1", keywords=["x"], timeout=5)  # filtered: not what the cache holds
                assert agent.finder_cache.get("c1").documents == [renamed]
            else:
                assert agent.finder_cache.get("c1") is None and computer.finder_requests == before
        assert agent.finder_cache.snapshot() == {}  # closing clears it


def test_a_computer_leaving_drops_its_cached_catalogue(server, computer):
    with joined_agent("a1", server.url, OFFICE, timeout=5, prefetch_finder=True) as agent:
        assert agent.finder_cache.wait_for("c1", timeout=5).documents == [SUMMARY]
        left = threading.Event()
        agent.on(events.LEAVE_OFFICE_NOTIFICATION, lambda n: left.set())
        computer.close()
        assert left.wait(10)
        assert "c1" not in agent.finder_cache


# -- the command line ------------------------------------------------------------------------------


def cli(url: str, *args: str) -> list[str]:
    return ["agent", "--url", url, "--office", OFFICE, "--name", "cli", "--timeout", "5", *args]


def test_cli_finder_and_read_print_the_catalogue_and_contents(server, computer, capsys):
    from smcp_sync.cli import main

    computer.answers[DOC] = json_contents(DOC, METADATA)
    blob = base64.b64encode(b"\x89PNG").decode()
    logo = {"uri": "file:///logo.png", "blob": blob, "mimeType": "image/png"}
    computer.answers["file:///logo.png"] = {"contents": [logo]}

    assert main(cli(server.url, "finder", "c1", "--keyword", "财务", "--keyword", "x", "--limit", "5")) == 0
    assert capsys.readouterr().out == f"{DOC}\txlsx\t12 pages\t2026 年度报告\n(1 of 1 documents)\n"
    [sent] = computer.requests(events.GET_FINDER)
    assert (sent["keywords"], sent["limit"], sent["offset"]) == (["财务", "x"], 5, 0)

    assert main(cli(server.url, "--json", "finder", "c1")) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == [to_wire(SUMMARY)]

    assert main(cli(server.url, "read", "c1", DOC)) == 0
    assert json.loads(capsys.readouterr().out) == to_wire(METADATA)
    assert main(cli(server.url, "read", "c1", "file:///logo.png", "--mcp-server", "files")) == 0
    assert capsys.readouterr().out == "[blob file:///logo.png: 4 bytes of image/png]\n"
    assert main(cli(server.url, "--json", "read", "c1", "file:///logo.png", "--mcp-server", "files")) == 0
    assert json.loads(capsys.readouterr().out) == computer.answers["file:///logo.png"]["contents"]


def test_cli_read_refuses_an_invalid_uri_before_connecting_and_reports_finder_errors(server, computer, capsys):
    from smcp_sync.cli import main

    assert main(cli("http://127.0.0.1:1", "read", "c1", f"{DOC}/pages/x")) == 2
    assert capsys.readouterr().err.startswith(f"smcp-sync agent: invalid dpe URI '{DOC}/pages/x': rule 3: page index")

    computer.answers[f"{DOC}/pages/99"] = FinderError("page 99 is out of range", code=4202)
    assert main(cli(server.url, "read", "c1", f"{DOC}/pages/99")) == 1
    assert capsys.readouterr().err == "smcp-sync agent: [4202] page 99 is out of range\n"
