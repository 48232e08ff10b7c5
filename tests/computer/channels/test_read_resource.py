"""Reading resources, completion and resource pages through the Computer (docs/ARCHITECTURE.md, Wire decisions
extension events): routing by URI host, the query passed through unchanged, Finder
errors 4201–4204 as typed exceptions, and what needs `mcp_server`."""

from __future__ import annotations

import json
import logging
import shutil
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer
from smcp_sync.demo import SAMPLE_DOCUMENTS
from smcp_sync.protocol import (
    BadRequestError,
    CompletionArgument,
    CompletionContext,
    DPECatalogue,
    DPEDocument,
    DPEElementDetail,
    DPEPage,
    ErrorCode,
    FinderError,
    InvalidURIError,
    MCPServerNotFoundError,
    NotFoundError,
    PromptReference,
    ResourceTemplateReference,
    TextResourceContents,
    from_wire,
)

from ..helpers import FAST, wait_until
from ..resource_helpers import DOCUMENTS_SERVER, module_config, resource_config

pytestmark = pytest.mark.timeout(60)

HOST = "com.example.docs"
PAGES = ResourceTemplateReference(uri=f"dpe://{HOST}/{{doc_ref}}/pages/{{page_index}}")
ELEMENTS = ResourceTemplateReference(uri=f"dpe://{HOST}/{{doc_ref}}/elements/{{element_id}}")
PLAIN_DOC = {"doc_ref": "doc", "uri": "dpe://plain/doc", "file_uri": "file:///doc", "file_type": "md", "title": "D",
             "page_count": 1}  # fmt: skip
RESOURCES = [
    {"uri": "dpe://plain/doc", "name": "doc", "json": PLAIN_DOC},
    {"uri": "window://app/w", "name": "w", "text": "a window"},
    {"uri": "file:///notes.txt", "name": "notes", "text": "plain notes"},
    {"uri": "memo://today", "name": "memo", "text": "a memo"},
    {"uri": "memo://tomorrow", "name": "memo 2", "text": "another memo"},
]


@pytest.fixture(scope="module")
def caplog_module() -> Iterator[list[logging.LogRecord]]:
    """The warnings of the module's Computer, kept from its start on."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("smcp_sync.computer")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory, caplog_module: list[logging.LogRecord]) -> Iterator[Computer]:
    """The documents server on the sample documents, a resource server ("res", pages of
    2) and one that also lists a document on the documents server's host ("clash").
    Read-only: the tests change nothing."""
    folder = tmp_path_factory.mktemp("reader")
    shutil.copytree(SAMPLE_DOCUMENTS, folder / "documents")
    configs = [
        module_config("docs", DOCUMENTS_SERVER, "--root", str(folder / "documents")),
        resource_config("res", folder / "res.json", RESOURCES, "--page-size", "2"),
        resource_config("clash", folder / "clash.json", [{"uri": f"dpe://{HOST}/shadow", "name": "s", "text": "s"}]),
    ]
    computer = Computer("reader", configs, policy=FAST)
    yield computer.start()
    computer.close()


@pytest.fixture(scope="module")
def sales(reader: Computer) -> str:
    """The Level 1 URI of the sample CSV (one page holding one table), once the catalogue
    is read (a cold Finder may answer before, with what is read: on a loaded machine)."""
    page = wait_until(
        lambda: (found := reader.finder(file_type="csv")).complete and found, timeout=30, what="a complete catalogue"
    )
    return page.documents[0].uri


def read_json(computer: Computer, uri: str, **kwargs: Any) -> Any:
    [contents] = computer.read_resource(uri, **kwargs)
    assert isinstance(contents, TextResourceContents) and contents.uri == uri
    return json.loads(contents.text)


def test_every_level_is_read_with_its_query_passed_through(reader: Computer, sales: str) -> None:
    catalogue = from_wire(DPECatalogue, read_json(reader, f"dpe://{HOST}"))  # Level 0: readable, not listed
    assert catalogue.total_count == 5 and sales in [d.uri for d in catalogue.documents]

    document = from_wire(DPEDocument, read_json(reader, f"{sales}?depth=pages&offset=0&limit=1"))
    assert document.page_count == 1 and document.page_total == 1 and document.page_limit == 1
    assert [p.uri for p in document.pages or []] == [f"{sales}/pages/0"]

    page = from_wire(DPEPage, read_json(reader, f"{sales}/pages/0?categories=table,pivot_table"))
    assert [e.category for e in page.elements] == ["table"]
    [markdown] = reader.read_resource(f"{sales}/pages/0?format=markdown")
    assert markdown.mime_type == "text/markdown" and markdown.text.startswith("| 月份 | 地区 |")

    element_id = page.elements[0].element_id
    element = from_wire(DPEElementDetail, read_json(reader, f"{sales}/elements/{element_id}"))
    assert element.category == "table" and element.content["headers"][:2] == ["月份", "地区"]


def test_the_document_servers_errors_keep_their_finder_codes(reader: Computer, sales: str) -> None:
    doc_ref = sales.rsplit("/", 1)[1]
    cases = {
        f"dpe://{HOST}/no-such-doc": (ErrorCode.DOCUMENT_NOT_FOUND, {"doc_ref": "no-such-doc"}),
        f"{sales}/pages/7": (ErrorCode.PAGE_OUT_OF_RANGE, {"doc_ref": doc_ref, "page_index": 7, "page_count": 1}),
        f"{sales}/elements/nope": (ErrorCode.ELEMENT_NOT_FOUND, {"doc_ref": doc_ref, "element_id": "nope"}),
    }
    for uri, (code, details) in cases.items():
        with pytest.raises(FinderError) as caught:
            reader.read_resource(uri)
        assert caught.value.code == code and caught.value.details == {**details, "mcp_server": "docs"}
        assert not caught.value.message.startswith("[")  # the "[42xx] " prefix is the wire's, not the message's
    with pytest.raises(FinderError, match="page 7 is out of range: document .* has 1 pages"):
        reader.read_resource(f"{sales}/pages/7")


def test_an_invalid_dpe_uri_is_4204_before_any_server_is_asked(reader: Computer) -> None:
    for uri, rule in [
        (f"dpe://{HOST}/doc?fromat=json", "unknown query parameter 'fromat'"),
        (f"dpe://{HOST}/doc/pages/-1", "rule 3"),
        (f"dpe://{HOST}/doc?limit=0", "rule 7"),
        ("dpe:///doc", "rule 2"),
    ]:
        with pytest.raises(InvalidURIError) as caught:
            reader.read_resource(uri, mcp_server="res")  # even with a server named
        assert caught.value.code == ErrorCode.INVALID_DPE_URI and rule in caught.value.message


def test_a_server_that_only_says_not_found_gets_the_code_of_the_level(reader: Computer) -> None:
    for uri, code, field in [
        ("dpe://plain/gone", ErrorCode.DOCUMENT_NOT_FOUND, {"doc_ref": "gone"}),
        ("dpe://plain/doc/pages/3", ErrorCode.PAGE_OUT_OF_RANGE, {"doc_ref": "doc", "page_index": 3}),
        ("dpe://plain/doc/elements/e1", ErrorCode.ELEMENT_NOT_FOUND, {"doc_ref": "doc", "element_id": "e1"}),
    ]:
        with pytest.raises(FinderError) as caught:
            reader.read_resource(uri)
        assert caught.value.code == code and caught.value.details.items() >= {"uri": uri, **field}.items()
    with pytest.raises(FinderError, match="no MCP server of this computer lists dpe://elsewhere URIs") as caught:
        reader.read_resource("dpe://elsewhere/doc")
    assert caught.value.code == ErrorCode.DOCUMENT_NOT_FOUND
    with pytest.raises(NotFoundError) as other:  # not a dpe:// URI: the MCP server's "not found" as it is
        reader.read_resource("file:///missing.txt", mcp_server="res")
    assert other.value.code == 404 and other.value.details["mcp_code"] == -32002


def test_uris_are_routed_by_host_and_other_schemes_need_mcp_server(
    reader: Computer, caplog_module: list[logging.LogRecord]
) -> None:
    assert reader.read_resource("window://app/w")[0].text == "a window"
    assert read_json(reader, "dpe://plain/doc")["title"] == "D"
    with pytest.raises(BadRequestError, match="reading 'file:///notes.txt' needs mcp_server") as caught:
        reader.read_resource("file:///notes.txt")
    assert caught.value.details == {"field": "mcp_server"}
    assert reader.read_resource("file:///notes.txt", mcp_server="res")[0].text == "plain notes"
    with pytest.raises(MCPServerNotFoundError, match="no MCP server named 'ghost'"):
        reader.read_resource("file:///notes.txt", mcp_server="ghost")
    with pytest.raises(NotFoundError, match="no MCP server of this computer lists window://elsewhere URIs"):
        reader.read_resource("window://elsewhere/w")

    # two servers list documents on one host: the first configured gets the request
    for _ in range(2):
        with pytest.raises(FinderError) as caught:
            reader.read_resource(f"dpe://{HOST}/shadow")
        assert caught.value.details["mcp_server"] == "docs"
    assert reader.read_resource(f"dpe://{HOST}/shadow", mcp_server="clash")[0].text == "s"
    clashes = [r.getMessage() for r in caplog_module if f"dpe://{HOST} is listed by MCP servers" in r.getMessage()]
    assert clashes == [f"dpe://{HOST} is listed by MCP servers ['docs', 'clash']; requests go to 'docs', the first "
                       "in the configuration"]  # fmt: skip


def test_completion_walks_doc_ref_then_page_index_then_element_id(reader: Computer, sales: str) -> None:
    doc_ref = sales.rsplit("/", 1)[1]
    refs = reader.complete(PAGES, CompletionArgument(name="doc_ref", value="sal"))
    assert (refs.values, refs.total, refs.has_more) == ([doc_ref], 1, False)
    pages = reader.complete(
        PAGES, CompletionArgument(name="page_index", value=""), CompletionContext(arguments={"doc_ref": doc_ref})
    )
    assert pages.values == ["0"]
    context = CompletionContext(arguments={"doc_ref": doc_ref, "page_index": "0"})
    elements = reader.complete(ELEMENTS, CompletionArgument(name="element_id", value=""), context)
    page = from_wire(DPEPage, read_json(reader, f"{sales}/pages/0"))
    assert elements.values == [e.element_id for e in page.elements]

    with pytest.raises(FinderError) as caught:  # the server's 4201 for an unknown doc_ref in the context
        unknown = CompletionContext(arguments={"doc_ref": "x"})
        reader.complete(PAGES, CompletionArgument(name="page_index", value=""), unknown)
    assert caught.value.code == ErrorCode.DOCUMENT_NOT_FOUND


def test_prompt_completion_needs_mcp_server(reader: Computer) -> None:
    prompt = PromptReference(name="summarise")
    with pytest.raises(BadRequestError, match="prompt 'summarise' needs mcp_server"):
        reader.complete(prompt, CompletionArgument(name="style", value=""))
    with pytest.raises(BadRequestError) as caught:  # forwarded; this server has no prompts, and says so
        reader.complete(prompt, CompletionArgument(name="style", value=""), mcp_server="docs")
    assert caught.value.details["mcp_code"] == -32602
    with pytest.raises(BadRequestError, match="completing 'memo://\\{day\\}' needs mcp_server"):
        reader.complete(ResourceTemplateReference(uri="memo://{day}"), CompletionArgument(name="day", value=""))


def test_resource_pages_follow_the_servers_cursor(reader: Computer) -> None:
    pages, cursor = [], None
    while True:
        resources, cursor = reader.get_resources("res", cursor)
        pages.append([r.uri for r in resources])
        if cursor is None:
            break
    assert pages == [[r["uri"] for r in RESOURCES[i : i + 2]] for i in (0, 2, 4)]
    with pytest.raises(MCPServerNotFoundError):
        reader.get_resources("ghost")
