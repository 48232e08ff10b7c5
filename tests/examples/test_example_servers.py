"""The bundled example MCP servers (smcp_sync.demo.servers), driven as child processes over stdio
with the ``mcp`` SDK client, exactly as a Computer or the demo runs them.

The documents server always serves a copy of the sample documents in tmp_path (with fixed
modification times, so order and ``last_modified`` are known), so tests may add, edit and
remove files. Each test runs its own event loop with ``asyncio.run``; ``stdio_client``
stops the child when the session ends. The tests that only read share one documents
server (``shared_server``), held open on an anyio portal's loop for the module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import attrs
import mcp.types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from smcp_sync.demo import SAMPLE_DOCUMENTS
from smcp_sync.context.dpe_render import render_markdown, render_text
from smcp_sync.protocol.models.dpe_documents import ELEMENT_CATEGORIES, DPEElementDetail
from smcp_sync.protocol.window_uri import parse_window_uri

pytestmark = pytest.mark.usefixtures("no_leaks")

SERVERS = "smcp_sync.demo.servers"
DOCUMENTS_SERVER = f"{SERVERS}.documents_server"
WINDOW_SERVER = f"{SERVERS}.window_server"
TOOLS_SERVER = f"{SERVERS}.tools_server"
HOST = "com.example.docs"
WAIT = 15.0  # upper bound for any notification; they normally arrive within a poll interval
SHARED_READS_TIMEOUT = 30.0  # upper bound for one test's reads on the shared server

REPORT, DESIGN, MEETING, SALES, RELEASE = (
    "2026-Q1-经营报告.md",
    "design-note-sync-bridge.md",
    "meeting-notes-2026-03-12.md",
    "sales-2026-q1.csv",
    "release-notes.txt",
)
MTIMES = {  # newest first: the catalogue order
    SALES: "2026-04-01T09:00:00Z",
    REPORT: "2026-03-31T10:00:00Z",
    DESIGN: "2026-03-20T16:45:00Z",
    MEETING: "2026-03-12T15:30:00Z",
    RELEASE: "2026-02-01T08:00:00Z",
}


def doc_ref(relative_path: str, slug: str) -> str:
    """The documented doc_ref rule: readable slug + 6 hex digits of SHA-1 of the path."""
    return f"{slug}-{hashlib.sha1(relative_path.encode('utf-8')).hexdigest()[:6]}"


REFS = {
    REPORT: doc_ref(REPORT, "2026-q1-经营报告"),  # letters of any script are kept
    DESIGN: doc_ref(DESIGN, "design-note-sync-bridge"),
    MEETING: doc_ref(MEETING, "meeting-notes-2026-03-12"),
    SALES: doc_ref(SALES, "sales-2026-q1"),
    RELEASE: doc_ref(RELEASE, "release-notes"),
}


def uri(name: str, sub: str = "") -> str:
    return f"dpe://{HOST}/{quote(REFS[name], safe='')}{sub}"  # a URI percent-encodes them


def set_mtime(path: Path, iso: str) -> None:
    ns = int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()) * 10**9
    os.utime(path, ns=(ns, ns))


def replace_file(path: Path, data: str | bytes, mtime: str | None = None) -> None:
    """Write `path` atomically (the server polls: it must never see half a file)."""
    temporary = path.with_name(f".{path.name}.tmp")  # hidden: never served
    if isinstance(data, str):
        data = data.encode("utf-8")
    temporary.write_bytes(data)
    if mtime is not None:
        set_mtime(temporary, mtime)
    os.replace(temporary, path)


def copy_documents(folder: Path) -> Path:
    """The sample documents copied to `folder`, with the modification times of MTIMES."""
    shutil.copytree(SAMPLE_DOCUMENTS, folder)
    for name, iso in MTIMES.items():
        set_mtime(folder / name, iso)
    return folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return copy_documents(tmp_path / "documents")


class Recorder:
    """A ``message_handler`` that keeps server notifications and lets a test wait for one."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._changed = asyncio.Condition()

    async def __call__(self, message: Any) -> None:
        async with self._changed:
            self.messages.append(message)
            self._changed.notify_all()

    def list_changed(self) -> int:
        return sum(isinstance(m, types.ResourceListChangedNotification) for m in self.messages)

    def updated(self, resource_uri: str | None = None) -> list[str]:
        uris = [m.params.uri for m in self.messages if isinstance(m, types.ResourceUpdatedNotification)]
        return [u for u in uris if resource_uri is None or u == resource_uri]

    async def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(condition), WAIT)
            except asyncio.TimeoutError:
                raise AssertionError(f"no {what} within {WAIT}s; got {self.messages!r}") from None


@contextlib.asynccontextmanager
async def connect(
    module: str, *args: str, tmp_path: Path, recorder: Recorder | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", module, *args])
    with open(tmp_path / f"{module.rpartition('.')[2]}-{time.monotonic_ns()}.stderr", "w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=recorder) as session:
                await session.initialize()
                yield session


def documents_server(docs: Path, tmp_path: Path, recorder: Recorder | None = None) -> Any:
    """A session with the documents server on `docs`, polling fast so tests wait little."""
    return connect(DOCUMENTS_SERVER, "--root", str(docs), "--poll-interval", "0.1", tmp_path=tmp_path, recorder=recorder)


@attrs.frozen
class SharedServer:
    """A documents server on `docs` that the module's reading tests share: one child
    process instead of one per test (each costs seconds of importing)."""

    docs: Path
    session: ClientSession
    portal: BlockingPortal

    def run(self, body: Callable[[ClientSession], Awaitable[None]]) -> None:
        """`await body(session)` on the session's event loop, bounded like any wait."""

        async def bounded() -> None:
            with anyio.fail_after(SHARED_READS_TIMEOUT):
                await body(self.session)

        self.portal.call(bounded)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """For tests that only read: they change neither the folder nor the session's state."""
    tmp_path = tmp_path_factory.mktemp("shared")
    folder = copy_documents(tmp_path / "documents")
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
        documents_server(folder, tmp_path)
    ) as session:
        yield SharedServer(folder, session, portal)


async def read(session: ClientSession, resource_uri: str) -> tuple[str, str]:
    contents = (await session.read_resource(resource_uri)).contents
    assert len(contents) == 1 and contents[0].uri == resource_uri
    assert isinstance(contents[0], types.TextResourceContents)
    return contents[0].mime_type or "", contents[0].text


async def read_json(session: ClientSession, resource_uri: str) -> Any:
    mime_type, text = await read(session, resource_uri)
    assert mime_type == "application/json"
    return json.loads(text)


async def subscribe(session: ClientSession, resource_uri: str) -> None:
    with warnings.catch_warnings():  # deprecated only for 2026-07-28 servers
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await session.subscribe_resource(resource_uri)


def assert_finder_error(error: MCPError, smcp_code: int, **details: Any) -> None:
    """The convention of smcp_sync/demo/servers/finder_errors.py."""
    assert error.code == (-32602 if smcp_code == 4204 else -32002), error
    assert error.message.startswith(f"[{smcp_code}] "), error.message
    assert error.data["smcp_code"] == smcp_code
    for key, value in details.items():
        assert error.data["details"][key] == value
        assert str(value) in error.message


async def read_error(session: ClientSession, resource_uri: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await session.read_resource(resource_uri)
    return caught.value


# ---------------------------------------------------------------------------------------
# documents server
# ---------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_documents_server_declares_capabilities_lists_documents_and_templates(shared_server: SharedServer) -> None:
    async def body(session: ClientSession) -> None:
        caps = session.server_capabilities
        assert caps is not None and caps.resources is not None and caps.completions is not None
        assert (caps.resources.subscribe, caps.resources.list_changed) == (True, True)

        resources = (await session.list_resources()).resources
        assert [r.uri for r in resources] == [uri(name) for name in MTIMES]  # newest first
        report = resources[1]
        assert report.name == REFS[REPORT] and report.title == "2026 年第一季度经营报告"
        assert report.mime_type == "application/json" and report.description.startswith("本报告汇总了")
        assert report.annotations is not None and report.annotations.last_modified == MTIMES[REPORT]

        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [
            f"dpe://{HOST}/{{doc_ref}}/pages/{{page_index}}",
            f"dpe://{HOST}/{{doc_ref}}/elements/{{element_id}}",
        ]

    shared_server.run(body)


@pytest.mark.timeout(60)
def test_navigation_from_catalogue_to_element_follows_returned_uris(shared_server: SharedServer) -> None:
    async def body(session: ClientSession) -> None:
        catalogue = await read_json(session, f"dpe://{HOST}")
        assert catalogue["total_count"] == 5
        assert [d["doc_ref"] for d in catalogue["documents"]] == [REFS[name] for name in MTIMES]
        summary = catalogue["documents"][1]
        assert summary == {
            "doc_ref": REFS[REPORT],
            "uri": uri(REPORT),
            "file_uri": (shared_server.docs / REPORT).resolve().as_uri(),
            "file_type": "md",
            "title": "2026 年第一季度经营报告",
            "page_count": 6,
            "keywords": ["经营概览", "收入分析", "成本与费用", "重点项目进展", "下季度计划"],
            "summary": summary["summary"],
            "last_modified": MTIMES[REPORT],
        }
        assert "pages" not in summary

        # Level 1: metadata only by default, the page index with depth=pages
        assert await read_json(session, summary["uri"]) == summary
        document = await read_json(session, summary["uri"] + "?depth=pages")
        assert (document["page_offset"], document["page_limit"], document["page_total"]) == (0, 20, 6)
        assert [(p["page_index"], p["title"], p["element_count"]) for p in document["pages"]] == [
            (0, "2026 年第一季度经营报告", 2), (1, "经营概览", 4), (2, "收入分析", 3),
            (3, "成本与费用", 3), (4, "重点项目进展", 2), (5, "下季度计划", 2),
        ]  # fmt: skip
        assert all(p["doc_ref"] == REFS[REPORT] for p in document["pages"])

        # Level 2: the page the index points to
        page = await read_json(session, document["pages"][2]["uri"])
        assert (page["page_index"], page["title"], page["element_count"]) == (2, "收入分析", 3)
        assert page["uri"] == uri(REPORT, "/pages/2") and page["doc_ref"] == REFS[REPORT]
        assert [(e["element_id"], e["category"]) for e in page["elements"]] == [
            ("h-003", "heading"), ("tbl-001", "table"), ("txt-004", "text"),
        ]  # fmt: skip
        heading, table = page["elements"][0], page["elements"][1]
        assert heading["content"] == {"level": 2, "text": "收入分析"}
        assert table["content"]["headers"] == ["月份", "收入（万元）", "环比", "同比"]
        assert table["content"]["rows"][3] == ["合计", "4,180", "—", "+14.6%"]
        assert table["summary"] == "月份, 收入（万元）, 环比, 同比 (4 rows × 4 columns)"

        # Level 3: the element in full
        element = await read_json(session, uri(REPORT, "/elements/tbl-001"))
        assert element == {
            "element_id": "tbl-001",
            "category": "table",
            "summary": table["summary"],
            "content": {**table["content"], "total_rows": 4, "total_columns": 4},
            "doc_ref": REFS[REPORT],
            "page_index": 2,
            "uri": uri(REPORT, "/elements/tbl-001"),
            "metadata": {"source_lines": "18-23"},
        }

    shared_server.run(body)


@pytest.mark.timeout(60)
def test_page_index_paging_categories_filter_and_formats(shared_server: SharedServer) -> None:
    async def body(session: ClientSession) -> None:
        paged = await read_json(session, uri(REPORT, "?depth=pages&offset=2&limit=3"))
        assert [p["page_index"] for p in paged["pages"]] == [2, 3, 4]
        assert (paged["page_offset"], paged["page_limit"], paged["page_total"]) == (2, 3, 6)
        past_end = await read_json(session, uri(REPORT, "?depth=pages&offset=6"))
        assert past_end["pages"] == [] and past_end["page_total"] == 6

        tables = await read_json(session, uri(REPORT, "/pages/2?categories=table"))
        assert [e["element_id"] for e in tables["elements"]] == ["tbl-001"]
        assert tables["element_count"] == 3  # the page's count, before filtering
        design = await read_json(session, uri(DESIGN, "/pages/2?categories=code,image,table"))
        assert [e["category"] for e in design["elements"]] == ["code", "image", "table"]
        assert design["elements"][1]["content"] == {
            "alt": "Thread layout of the bridge", "url": "images/bridge-threads.svg",
        }  # fmt: skip

        mime_type, markdown = await read(session, uri(REPORT, "/pages/2?format=markdown"))
        assert mime_type == "text/markdown"
        assert markdown.startswith("## 收入分析\n\n| 月份 | 收入（万元） | 环比 | 同比 |\n| --- | --- | --- | --- |\n")
        assert "| 3 月 | 1,615 | +23.8% | +18.1% |" in markdown
        mime_type, text = await read(session, uri(REPORT, "/pages/2?format=text"))
        assert mime_type == "text/plain"
        assert text.startswith("收入分析\n\n月份\t收入（万元）\t环比\t同比\n1 月\t1,260\t-6.0%\t+11.2%")
        assert "|" not in text and "#" not in text

        mime_type, code = await read(session, uri(DESIGN, "/elements/code-001?format=markdown"))
        assert (mime_type, code.splitlines()[0], code.splitlines()[-1]) == ("text/markdown", "```python", "```")
        _, document = await read(session, uri(MEETING, "?format=markdown&depth=pages&limit=2"))
        assert document.startswith("# 产品评审会议纪要（2026-03-12）\n")
        assert "- keywords: 会议纪要, 产品评审, Finder" in document and "Pages 0–1 of 4" in document
        mime_type, catalogue = await read(session, f"dpe://{HOST}?format=text")
        assert mime_type == "text/plain"
        assert [line for line in catalogue.splitlines() if line.startswith("page_count:")] == [
            "page_count: 1", "page_count: 6", "page_count: 5", "page_count: 4", "page_count: 2",
        ]  # fmt: skip

    shared_server.run(body)


@pytest.mark.timeout(60)
def test_csv_text_and_front_matter_documents(shared_server: SharedServer) -> None:
    async def body(session: ClientSession) -> None:
        sales = await read_json(session, uri(SALES, "?depth=pages"))
        assert (sales["file_type"], sales["title"], sales["page_count"]) == ("csv", "sales-2026-q1", 1)
        assert sales["keywords"] == ["月份", "地区", "产品", "销量", "销售额（元）"]
        page = await read_json(session, uri(SALES, "/pages/0"))
        assert [(e["element_id"], e["category"]) for e in page["elements"]] == [("tbl-001", "table")]
        table = await read_json(session, uri(SALES, "/elements/tbl-001"))
        assert table["content"]["rows"][0] == ["2026-01", "华东", "企业版订阅", "48", "1152000"]
        assert (table["content"]["total_rows"], table["content"]["total_columns"]) == (12, 5)
        assert table["metadata"] == {"source_range": "A1:E13"}

        release = await read_json(session, uri(RELEASE, "?depth=pages"))
        assert release["title"] == "Release notes - document service 1.4" and release["file_type"] == "txt"
        assert [p["title"] for p in release["pages"]] == ["Release notes - document service 1.4", "Upgrade notes"]
        second = await read_json(session, uri(RELEASE, "/pages/1"))
        assert second["elements"][1]["content"]["text"].startswith("No configuration changes are needed.")

        meeting = await read_json(session, uri(MEETING))
        assert meeting["title"] == "产品评审会议纪要（2026-03-12）"  # front matter beats the H1
        assert meeting["keywords"] == ["会议纪要", "产品评审", "Finder"]
        assert meeting["summary"].startswith("评审 Finder 文档导航的交互方案")
        design = await read_json(session, uri(DESIGN, "?depth=pages"))
        assert design["keywords"] == ["architecture", "threading", "asyncio", "MCP"]
        assert [p["title"] for p in design["pages"]] == [
            "Design note: the synchronous bridge", "Problem", "Decision", "Consequences", "References",
        ]  # fmt: skip

    shared_server.run(body)


EDGE_CASES = """\
Title in setext style
=====================

A paragraph
over two lines.

1. first
2. second
   continued
   - nested a
   - nested b
3. third

~~~js
let x = 1;
~~~

Left | Right
:--- | ---:
a \\| b | c

Section two
-----------

> quoted
> lines

* * *

$$ e = mc^2 $$

![logo](https://example.com/logo.png "The logo")

[Example site](https://example.com)

```
unclosed fence runs to the end
"""


@pytest.mark.timeout(60)
def test_markdown_structures_become_the_right_elements(tmp_path: Path) -> None:
    folder = tmp_path / "edge"
    folder.mkdir()
    (folder / "edge.md").write_text(EDGE_CASES, encoding="utf-8")
    ref = doc_ref("edge.md", "edge")

    async def body() -> None:
        async with documents_server(folder, tmp_path) as session:
            document = await read_json(session, f"dpe://{HOST}/{ref}?depth=pages")
            assert document["title"] == "Title in setext style"
            assert [p["title"] for p in document["pages"]] == ["Title in setext style", "Section two"]
            first = await read_json(session, f"dpe://{HOST}/{ref}/pages/0")
            second = await read_json(session, f"dpe://{HOST}/{ref}/pages/1")
            contents = [(e["category"], e["content"]) for e in first["elements"] + second["elements"]]
            assert contents == [
                ("heading", {"level": 1, "text": "Title in setext style"}),
                ("text", {"text": "A paragraph\nover two lines."}),
                ("list", {"ordered": True, "items": ["first", "second continued", ["nested a", "nested b"], "third"]}),
                ("code", {"code": "let x = 1;", "language": "js"}),
                ("table", {"headers": ["Left", "Right"], "rows": [["a | b", "c"]]}),
                ("heading", {"level": 2, "text": "Section two"}),
                ("text", {"text": "quoted\nlines", "quote": True}),
                ("separator", {}),
                ("formula", {"expression": "e = mc^2"}),
                ("image", {"alt": "logo", "url": "https://example.com/logo.png", "title": "The logo"}),
                ("link", {"text": "Example site", "url": "https://example.com"}),
                ("code", {"code": "unclosed fence runs to the end\n"}),
            ]
            _, markdown = await read(session, f"dpe://{HOST}/{ref}/pages/0?format=markdown")
            assert "1. first\n2. second continued\n   1. nested a\n   2. nested b\n3. third" in markdown

    asyncio.run(body())


@pytest.mark.timeout(60)
def test_completion_of_doc_ref_page_index_and_element_id(docs: Path, tmp_path: Path) -> None:
    long_doc = "# Long\n\n" + "".join(f"## Part {i}\n\nText {i}.\n\n" for i in range(1, 120))
    (docs / "long.md").write_text(long_doc, encoding="utf-8")
    pages = types.ResourceTemplateReference(uri=f"dpe://{HOST}/{{doc_ref}}/pages/{{page_index}}")
    elements = types.ResourceTemplateReference(uri=f"dpe://{HOST}/{{doc_ref}}/elements/{{element_id}}")

    async def body() -> None:
        async with documents_server(docs, tmp_path) as session:

            async def complete(ref: Any, name: str, value: str, **context: str) -> types.Completion:
                result = await session.complete(ref, {"name": name, "value": value}, context or None)
                return result.completion

            every = await complete(pages, "doc_ref", "")
            assert sorted(every.values) == sorted([*REFS.values(), doc_ref("long.md", "long")])
            assert (every.total, every.has_more) == (6, False)
            design = await complete(elements, "doc_ref", "DES")  # prefix, case-insensitive
            assert (design.values, design.total) == ([REFS[DESIGN]], 1)

            report_pages = await complete(pages, "page_index", "", doc_ref=REFS[REPORT])
            assert report_pages.values == ["0", "1", "2", "3", "4", "5"] and report_pages.total == 6
            capped = await complete(pages, "page_index", "", doc_ref=doc_ref("long.md", "long"))
            assert (len(capped.values), capped.total, capped.has_more) == (100, 120, True)
            assert capped.values[:3] == ["0", "1", "2"]
            ones = await complete(pages, "page_index", "11", doc_ref=doc_ref("long.md", "long"))
            assert ones.values == ["11", *[str(i) for i in range(110, 120)]]

            tables = await complete(elements, "element_id", "tbl", doc_ref=REFS[REPORT])
            assert (tables.values, tables.total, tables.has_more) == (["tbl-001"], 1, False)
            on_page = await complete(elements, "element_id", "", doc_ref=REFS[REPORT], page_index="2")
            assert on_page.values == ["h-003", "tbl-001", "txt-004"]

            with pytest.raises(MCPError) as missing:
                await complete(pages, "page_index", "")
            assert missing.value.code == types.INVALID_PARAMS and "doc_ref" in missing.value.message
            with pytest.raises(MCPError) as wrong_argument:
                await complete(pages, "element_id", "")
            assert wrong_argument.value.code == types.INVALID_PARAMS and "element_id" in wrong_argument.value.message
            unknown_template = types.ResourceTemplateReference(uri="dpe://other/{doc_ref}")
            with pytest.raises(MCPError) as unknown:
                await complete(unknown_template, "doc_ref", "")
            assert unknown.value.code == types.INVALID_PARAMS and "dpe://other/{doc_ref}" in unknown.value.message
            with pytest.raises(MCPError) as no_doc:
                await complete(pages, "page_index", "", doc_ref="nope-000000")
            assert_finder_error(no_doc.value, 4201, doc_ref="nope-000000")
            with pytest.raises(MCPError) as no_page:
                await complete(elements, "element_id", "", doc_ref=REFS[REPORT], page_index="6")
            assert_finder_error(no_page.value, 4202, page_index=6, page_count=6)

    asyncio.run(body())


@pytest.mark.timeout(60)
def test_finder_errors_carry_the_smcp_code(shared_server: SharedServer) -> None:
    async def body(session: ClientSession) -> None:
        assert_finder_error(await read_error(session, f"dpe://{HOST}/nope-000000"), 4201, doc_ref="nope-000000")
        out_of_range = await read_error(session, uri(REPORT, "/pages/6"))
        assert_finder_error(out_of_range, 4202, doc_ref=REFS[REPORT], page_index=6, page_count=6)
        assert_finder_error(
            await read_error(session, uri(REPORT, "/elements/tbl-099")), 4203, element_id="tbl-099"
        )
        for bad, rule in [
            (uri(REPORT, "?format=xml"), "rule 4"),
            (uri(REPORT, "?depth=all"), "rule 5"),
            (uri(REPORT, "?depth=pages&offset=-1"), "rule 6"),
            (uri(REPORT, "?depth=pages&limit=101"), "rule 7"),
            (uri(REPORT, "/pages/0?categories=table,chartz"), "rule 8"),
            (uri(REPORT, "/pages/first"), "rule 3"),
            (f"file:///{REPORT}", "rule 1"),
        ]:
            error = await read_error(session, bad)
            assert_finder_error(error, 4204, uri=bad)
            assert rule in error.message
        elsewhere = await read_error(session, "dpe://com.example.other/whatever")
        assert elsewhere.code == -32002 and elsewhere.data is None
        with pytest.raises(MCPError) as subscription:
            await subscribe(session, f"dpe://{HOST}/nope-000000")
        assert_finder_error(subscription.value, 4201, doc_ref="nope-000000")
        assert len((await session.list_resources()).resources) == 5  # still serving

    shared_server.run(body)


@pytest.mark.timeout(90)
def test_folder_changes_send_list_changed_and_updated(docs: Path, tmp_path: Path) -> None:
    recorder = Recorder()
    new_ref = doc_ref("notes/new-idea.md", "notes-new-idea")

    async def body() -> None:
        async with documents_server(docs, tmp_path, recorder) as session:
            await subscribe(session, uri(REPORT))
            await subscribe(session, uri(REPORT, "/pages/5"))

            # Files that are not documents first, then one that is: one list_changed, for it
            replace_file(docs / ".draft.md", "# hidden")
            replace_file(docs / "broken.md", b"\xff\xfe not utf-8 \xff")
            replace_file(docs / "images" / "photo.png", b"\x89PNG")
            (docs / "notes").mkdir()
            replace_file(docs / "notes" / "new-idea.md", "# 新想法\n\n用 Finder 管理周报。\n")
            await recorder.wait_until(lambda: recorder.list_changed() >= 1, "list_changed after adding a file")
            listed = {r.name for r in (await session.list_resources()).resources}
            assert listed == {*REFS.values(), new_ref}
            assert (await read_json(session, f"dpe://{HOST}/{new_ref}"))["title"] == "新想法"

            # Edits: updated for the subscribed URIs of the edited document only
            meeting = (docs / MEETING).read_text(encoding="utf-8")
            replace_file(docs / MEETING, meeting + "4. 王磊：确认发布日期\n", "2026-04-02T08:00:00Z")
            report = (docs / REPORT).read_text(encoding="utf-8")
            replace_file(docs / REPORT, report + "\n补充：4 月 1 日董事会已审议通过第二季度目标。\n", "2026-04-02T09:00:00Z")
            await recorder.wait_until(
                lambda: len(recorder.updated()) >= 2, "updated for the report's two subscribed URIs"
            )
            assert sorted(recorder.updated()) == sorted([uri(REPORT), uri(REPORT, "/pages/5")])
            report_doc = await read_json(session, uri(REPORT))
            assert report_doc["last_modified"] == "2026-04-02T09:00:00Z"
            last_page = await read_json(session, uri(REPORT, "/pages/5"))
            assert last_page["elements"][-1]["content"]["text"].startswith("补充：4 月 1 日董事会")
            assert recorder.list_changed() == 1  # an edit is not a list change

            # Removal
            (docs / SALES).unlink()
            await recorder.wait_until(lambda: recorder.list_changed() >= 2, "list_changed after removing a file")
            assert REFS[SALES] not in {r.name for r in (await session.list_resources()).resources}
            assert_finder_error(await read_error(session, uri(SALES)), 4201, doc_ref=REFS[SALES])

    asyncio.run(body())


@pytest.mark.timeout(60)
def test_documents_server_refuses_a_bad_command_line(tmp_path: Path) -> None:
    cases = [
        (["--root", str(tmp_path / "missing")], "is not a folder"),
        (["--root", str(tmp_path), "--host-id", "bad host"], "--host-id"),
        (["--root", str(tmp_path), "--poll-interval", "0"], "--poll-interval must be positive"),
    ]
    runs = [  # started together: each spends its time importing
        subprocess.Popen(
            [sys.executable, "-m", DOCUMENTS_SERVER, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for args, _ in cases
    ]
    try:
        outcomes = [(run.communicate(timeout=30)[1], run.returncode) for run in runs]
    finally:
        for run in runs:
            run.kill()  # no-op for the ones that exited
            run.wait(timeout=10)
    for (stderr, returncode), (_, expected) in zip(outcomes, cases):
        assert returncode == 2 and expected in stderr, stderr


# ---------------------------------------------------------------------------------------
# window server
# ---------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_window_server_windows_priorities_and_fullscreen(tmp_path: Path) -> None:
    async def body() -> None:
        async with connect(WINDOW_SERVER, "--interval", "30", tmp_path=tmp_path) as session:
            caps = session.server_capabilities
            assert caps is not None and caps.resources is not None
            assert (caps.resources.subscribe, caps.resources.list_changed) == (True, True)
            resources = (await session.list_resources()).resources
            windows = {r.name: parse_window_uri(r.uri) for r in resources}
            assert {name: w.priority for name, w in windows.items()} == {
                "browser": 80, "editor": 60, "terminal": 40, "monitor": 20,
            }  # fmt: skip
            assert [name for name, w in windows.items() if w.fullscreen] == ["monitor"]
            assert all(w.host == "com.example.desktop" and w.path == (name,) for name, w in windows.items())
            for resource in resources:
                mime_type, text = await read(session, resource.uri)
                assert mime_type == "text/plain" and text.strip()
            _, editor = await read(session, next(r.uri for r in resources if r.name == "editor"))
            assert editor.startswith("notes/todo.md") and "- [ ] Write the release notes" in editor
            with pytest.raises(MCPError) as unknown:
                await session.read_resource("window://com.example.desktop/editor")  # not the listed URI
            assert unknown.value.code == -32002

        async with connect(WINDOW_SERVER, "--fullscreen", "none", tmp_path=tmp_path) as session:
            uris = [parse_window_uri(r.uri) for r in (await session.list_resources()).resources]
            assert len(uris) == 4 and not any(w.fullscreen for w in uris)

    asyncio.run(body())


@pytest.mark.timeout(60)
def test_window_server_updates_the_monitor_periodically(tmp_path: Path) -> None:
    recorder = Recorder()

    async def body() -> None:
        async with connect(WINDOW_SERVER, "--interval", "0.1", tmp_path=tmp_path, recorder=recorder) as session:
            resources = {r.name: r.uri for r in (await session.list_resources()).resources}
            await subscribe(session, resources["monitor"])
            await subscribe(session, resources["editor"])
            await recorder.wait_until(lambda: len(recorder.updated()) >= 2, "two monitor updates")
            _, text = await read(session, resources["monitor"])
            tick = int(re.match(r"System monitor — tick (\d+)\n", text).group(1))
            assert tick >= 2
            assert re.search(r"^clock \d\d:\d\d:\d\d UTC$", text, re.M)
            assert text.endswith(f"CPU {12 + tick * 7 % 60}% · memory {2048 + tick * 37 % 512} MiB")
            assert set(recorder.updated()) == {resources["monitor"]}  # the editor never changes

    asyncio.run(body())


# ---------------------------------------------------------------------------------------
# tools server
# ---------------------------------------------------------------------------------------


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.timeout(60)
def test_tools_server_tools(docs: Path, tmp_path: Path) -> None:
    async def body() -> None:
        async with connect(TOOLS_SERVER, "--root", str(docs), tmp_path=tmp_path) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"calculate", "text_stats", "current_time", "list_documents", "read_document"}
            assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools.values())
            assert all(t.description and "\n" not in t.description for t in tools.values())

            async def call(name: str, **arguments: Any) -> types.CallToolResult:
                return await session.call_tool(name, arguments)

            assert text_of(await call("calculate", expression="(1260 + 1305 + 1615) / 3")) == "1393.33333333"
            assert text_of(await call("calculate", expression="0.1 + 0.2")) == "0.3"
            assert text_of(await call("calculate", expression="2 ** 100")) == str(2**100)
            for refused, reason in [
                ("__import__('os').system('true')", "calling \"__import__('os').system\" is not allowed"),
                ("1 / 0", "division by zero"),
                ("9 ** 9 ** 9", "more than 1000 digits"),
                ("1 +", "not an arithmetic expression"),
            ]:
                result = await call("calculate", expression=refused)
                assert result.is_error and reason in text_of(result), text_of(result)

            stats = await call("text_stats", text="Hello world, 你好世界！\n\nIt's 2026.")
            assert stats.structured_content == {
                "characters": 30, "non_space_characters": 25, "cjk_characters": 4,
                "words": 4, "lines": 3, "paragraphs": 2,
            }  # fmt: skip

            before = datetime.now(timezone.utc)
            stamp = text_of(await call("current_time", utc_offset="+08:00"))
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00", stamp)
            assert abs((datetime.fromisoformat(stamp) - before).total_seconds()) < 10
            assert re.fullmatch(r".*T.*\+00:00", text_of(await call("current_time")))
            wrong = await call("current_time", utc_offset="+25:00")
            assert wrong.is_error and "'+25:00'" in text_of(wrong)

            listed = (await call("list_documents")).structured_content
            assert listed == {"result": sorted(MTIMES)}
            assert text_of(await call("read_document", path=RELEASE)) == (docs / RELEASE).read_text(encoding="utf-8")
            cut = text_of(await call("read_document", path=REPORT, max_characters=10))
            total = len((docs / REPORT).read_text(encoding="utf-8"))
            assert cut == f"# 2026 年第一\n\n[truncated: 10 of {total} characters shown]"
            for outside in [f"../documents/{RELEASE}/..", "../../etc/passwd", "images/bridge-threads.svg", "nope.md"]:
                result = await call("read_document", path=outside)
                assert result.is_error and f"no document {outside!r}" in text_of(result)
                assert str(tmp_path) not in text_of(result)

    asyncio.run(body())


# ---------------------------------------------------------------------------------------
# robustness of the pure pieces, in-process (hypothesis)
# ---------------------------------------------------------------------------------------


def example_module(name: str) -> Any:
    """A module of the example servers' package."""
    return importlib.import_module(f"{SERVERS}.{name}")


def joined(tokens: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens), max_size=max_size).map("".join)


MARKDOWNISH = joined([*"#-*+>|`~$![]()=:_ 1.\t\n\fa中", "---\n", "```", "$$", "\\|", "\r\n"], 200)
ARITHMETIC = joined([*"0123456789+-*/%().e ", "**", "sqrt", "pi", "9**9", "min", ","], 40)


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(text=MARKDOWNISH)
def test_any_text_parses_into_renderable_pages(text: str) -> None:
    parsers = [
        example_module("markdown_parser").parse_markdown,
        example_module("text_parser").parse_text,
        lambda t, title: example_module("tabular_parser").parse_table(t, title, ","),
    ]
    number_elements = example_module("parsed_document").number_elements
    for parse in parsers:
        parsed = parse(text, "fallback")
        assert parsed.title and parsed.sections
        pages = number_elements(parsed.sections)
        ids = [e.element_id for page in pages for e in page]
        assert len(ids) == len(set(ids))
        for element in (e for page in pages for e in page):
            assert element.block.category in ELEMENT_CATEGORIES
            detail = DPEElementDetail(
                element_id=element.element_id, category=element.block.category, content=element.block.content
            )
            assert isinstance(render_markdown(detail), str) and isinstance(render_text(detail), str)


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(expression=ARITHMETIC)
def test_calculator_answers_or_refuses_any_input(expression: str) -> None:
    arithmetic = example_module("arithmetic")
    try:
        value = arithmetic.evaluate(expression)
    except arithmetic.ArithmeticRefused as refused:
        assert str(refused)
    else:
        assert isinstance(arithmetic.format_number(value), str)
