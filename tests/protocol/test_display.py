"""Notebook display and short reprs of the results people read (`models._display`):
tables in HTML and Markdown, every peer-supplied value escaped."""

from __future__ import annotations

import pytest

from smcp_sync.agent.cache import ComputerCache
from smcp_sync.protocol.models import (
    CallToolResult,
    DPEDocument,
    DPEDocumentSummary,
    DPEElementDetail,
    DPEPage,
    DPEPageSummary,
    GetFinderRet,
    MarkdownText,
    SessionInfo,
    SessionList,
    SMCPTool,
    TextContent,
    ToolList,
)

HOSTILE = "R&D <script>x</script> | *bold*"


def summary(title: str, index: int) -> DPEDocumentSummary:
    return DPEDocumentSummary(
        doc_ref=f"d{index}", uri=f"dpe://h/d{index}", file_uri=f"file:///d{index}.md", file_type="md",
        title=title, page_count=index + 1, keywords=["q&a"], server="docs",
    )


def test_a_finder_page_is_a_table_with_its_values_escaped_and_a_short_repr() -> None:
    page = GetFinderRet(documents=[summary(HOSTILE, i) for i in range(50)], total_count=120, req_id="r")
    html = page._repr_html_()
    assert html.startswith("<table><caption>50 of 120 documents</caption><thead><tr><th>title</th>")
    assert html.count("<tr>") == 51 and "<script>" not in html
    assert "<td>R&amp;D &lt;script&gt;x&lt;/script&gt; | *bold*</td><td>md</td><td>1</td><td>dpe://h/d0</td><td>docs</td>" in html
    markdown = page._repr_markdown_()
    lines = markdown.splitlines()
    assert lines[:4] == ["**50 of 120 documents**", "", "| title | type | pages | uri | MCP server |", "|---|---|---|---|---|"]
    assert lines[4] == r"| R&amp;D &lt;script&gt;x&lt;/script&gt; \| \*bold\* | md | 1 | dpe://h/d0 | docs |"
    assert len(lines) == 54
    shown = repr(page)
    assert shown.startswith("GetFinderRet(50 of 120 documents: 'R&D <script>x</script> | *bold*', ") and shown.endswith(", ...)")
    assert len(shown) < 200


def test_a_document_shows_its_facts_and_page_index() -> None:
    document = DPEDocument(
        doc_ref="d", uri="dpe://h/d", file_uri="file:///d.md", file_type="md", title="A & B", page_count=2,
        keywords=["x", "y<z"], summary="two pages",
        pages=[DPEPageSummary(page_index=0, title="<intro>", element_count=3, uri="dpe://h/d/pages/0")],
    )
    html = document._repr_html_()
    assert html.startswith("<strong>A &amp; B</strong><table>")
    assert "<td>keywords</td><td>x, y&lt;z</td>" in html
    assert "<td>0</td><td>&lt;intro&gt;</td><td>3</td><td>dpe://h/d/pages/0</td>" in html
    markdown = document._repr_markdown_()
    assert markdown.startswith("### A &amp; B\n\n- **uri**: dpe://h/d\n")
    assert "- **keywords**: x, y&lt;z\n" in markdown and "| 0 | &lt;intro&gt; | 3 | dpe://h/d/pages/0 |" in markdown
    assert repr(document) == "DPEDocument('A & B', uri='dpe://h/d', 2 pages)"
    assert repr(summary("T", 0)) == "DPEDocumentSummary('T', uri='dpe://h/d0', 1 pages)"


def test_a_page_lists_its_elements() -> None:
    page = DPEPage(
        page_index=3, title="Q&A", uri="dpe://h/d/pages/3",
        elements=[DPEElementDetail(element_id="e<1>", category="table", content={}, summary="a & b")],
    )
    assert page._repr_html_() == (
        "<strong>Q&amp;A</strong> (page 3)<table><caption>1 elements</caption><thead><tr><th>element</th>"
        "<th>category</th><th>summary</th></tr></thead><tbody><tr><td>e&lt;1&gt;</td><td>table</td>"
        "<td>a &amp; b</td></tr></tbody></table>"
    )
    assert repr(page) == "DPEPage(3, 'Q&A', 1 elements, uri='dpe://h/d/pages/3')"


def test_tool_and_room_lists_are_tables_and_stay_lists() -> None:
    tools = ToolList(
        SMCPTool(name=f"srv__t{i}", description=f"{HOSTILE}\nmore", params_schema={"type": "object"}, bundle_id="srv")
        for i in range(5)
    )
    assert isinstance(tools, list) and len(tools) == 5
    assert repr(tools) == "ToolList(5 tools: 'srv__t0', 'srv__t1', 'srv__t2', ...)"
    html = tools._repr_html_()
    assert "<caption>5 tools</caption>" in html and "more" not in html and "<script>" not in html
    assert "<td>srv__t0</td><td>srv</td><td>R&amp;D &lt;script&gt;" in html
    assert r"| srv\_\_t0 | srv | R&amp;D" in tools._repr_markdown_()

    room = SessionList([SessionInfo(sid="s1", name="<me>", role="agent", office_id="o")])
    assert repr(room) == "SessionList(1 sessions: 'agent <me>')"
    assert "<td>agent</td><td>&lt;me&gt;</td><td>s1</td><td></td>" in room._repr_html_()
    assert "| agent | &lt;me&gt; | s1 |  |" in room._repr_markdown_()


def test_a_tool_result_shows_its_text_escaped_and_says_when_it_failed() -> None:
    ok = CallToolResult(content=[TextContent(text="1 < 2 & 3")])
    assert ok._repr_html_() == "<pre>1 &lt; 2 &amp; 3</pre>"
    assert repr(ok) == "CallToolResult(text='1 < 2 & 3', is_error=False)"
    failed = CallToolResult.failure(4003, "x" * 500)
    assert failed._repr_html_().startswith("<strong>tool error [4003]</strong><pre>xxx")
    assert len(repr(failed)) < 150 and repr(failed).endswith("is_error=True, error_code=4003)")
    structured = CallToolResult(structured_content={"a": "<b>"})
    assert structured._repr_html_() == '<pre>{\n  &quot;a&quot;: &quot;&lt;b&gt;&quot;\n}</pre>'


def test_rendered_markdown_displays_as_markdown_and_the_cache_repr_names_computers() -> None:
    rendered = MarkdownText("# Title\n\ntext")
    assert rendered == "# Title\n\ntext" and rendered._repr_markdown_() == "# Title\n\ntext"
    cache: ComputerCache[tuple[int, ...]] = ComputerCache()
    assert repr(cache) == "<ComputerCache (empty)>"
    cache.store("c2", (1,), cache.ticket())
    cache.store("c1", (2,), cache.ticket())
    assert repr(cache) == "<ComputerCache of 2 computers: 'c1', 'c2'>"


@pytest.mark.parametrize(
    "text, cell",
    [("a|b", r"a\|b"), ("`code`", r"\`code\`"), ("[link](x)", r"\[link\]\(x\)"), ("#heading", r"\#heading"), ("<b>&", "&lt;b&gt;&amp;")],
)
def test_markdown_cells_are_literal(text: str, cell: str) -> None:
    row = ToolList([SMCPTool(name=text, description="", params_schema={})])._repr_markdown_().splitlines()[-1]
    assert row == f"| {cell} |  |  |"


def test_the_display_lists_are_plain_lists_on_the_wire() -> None:
    from smcp_sync.protocol.codec import to_wire

    tools = ToolList([SMCPTool(name="t", description="d", params_schema={})])
    assert to_wire(tools) == [{"name": "t", "description": "d", "params_schema": {}, "return_schema": None}]
    room = SessionList([SessionInfo(sid="s", name="n", role="agent", office_id="o")])
    assert to_wire(room) == [{"sid": "s", "name": "n", "role": "agent", "office_id": "o"}]
