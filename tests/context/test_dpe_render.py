"""DPE rendering: spec/finder.md "Markdown 渲染规则" for every category, the plain-text form,
pages and documents, and robustness against arbitrary element content."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.context import render_markdown, render_text
from smcp_sync.protocol import from_wire
from smcp_sync.protocol.models import ELEMENT_CATEGORIES, DPEDocument, DPEElementDetail, DPEPage, DPEPageSummary

pytestmark = pytest.mark.timeout(60)


def element(category: str, content: dict, summary: str | None = "a summary", element_id: str = "el-1"):
    return DPEElementDetail(element_id=element_id, category=category, content=content, summary=summary)


def both(category: str, content: dict, **kwargs) -> tuple[str, str]:
    item = element(category, content, **kwargs)
    return render_markdown(item), render_text(item)


# -- heading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "hashes"),
    [(1, "#"), (2, "##"), (3, "###"), (6, "######"), (9, "######"), (0, "#"), (None, "#"), ("2", "#")],
)
def test_heading_level_sets_the_number_of_hashes(level, hashes):
    assert both("heading", {"level": level, "text": "Title"}) == (f"{hashes} Title", "Title")


def test_heading_is_one_line_and_falls_back_to_summary():
    assert both("heading", {"level": 2, "text": "Two\nlines"}) == ("## Two lines", "Two lines")
    assert both("heading", {"level": 2}, summary="From summary") == ("## From summary", "From summary")


# -- text ------------------------------------------------------------------------------------


def test_text_is_output_as_is_keeping_paragraph_breaks():
    body = "First paragraph.\n\nSecond *paragraph*\nwith a break."
    assert both("text", {"text": body}) == (body, body)


# -- table -----------------------------------------------------------------------------------


def test_table_with_headers_and_rows():
    content = {"headers": ["季度", "收入"], "rows": [["Q1", "1,250"], ["Q2", 1380]]}
    assert both("table", content) == (
        "| 季度 | 收入 |\n| --- | --- |\n| Q1 | 1,250 |\n| Q2 | 1380 |",
        "季度\t收入\nQ1\t1,250\nQ2\t1380",
    )


def test_table_cells_escape_pipes_and_line_breaks():
    content = {"headers": ["a|b"], "rows": [["x\ny"], ["p | q"], [None]]}
    assert both("table", content) == (
        "| a\\|b |\n| --- |\n| x<br>y |\n| p \\| q |\n|  |",
        "a|b\nx y\np | q\n",
    )


def test_ragged_table_is_padded_to_the_widest_row():
    content = {"headers": ["h"], "rows": [["1", "2", "3"], ["4"]]}
    assert render_markdown(element("table", content)) == "| h |  |  |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n| 4 |  |  |"


def test_table_without_headers_gets_an_empty_header_row():
    assert both("table", {"rows": [["a", "b"]]}) == ("|  |  |\n| --- | --- |\n| a | b |", "a\tb")


# -- list ------------------------------------------------------------------------------------


def test_unordered_list():
    assert both("list", {"items": ["one", "two"]}) == ("- one\n- two", "- one\n- two")


def test_ordered_list_with_a_nested_sub_list():
    content = {"ordered": True, "items": ["one", ["sub a", "sub b"], "two", 3]}
    expected = "1. one\n   1. sub a\n   2. sub b\n2. two\n3. 3"
    assert both("list", content) == (expected, expected)


def test_nested_unordered_list_indents_by_two():
    assert render_markdown(element("list", {"items": ["a", ["b", ["c"]]]})) == "- a\n  - b\n    - c"


# -- code ------------------------------------------------------------------------------------


def test_code_is_fenced_with_its_language():
    assert both("code", {"language": "python", "code": "print(1)\n"}) == ("```python\nprint(1)\n\n```", "print(1)\n")


def test_code_without_language_and_from_text_field():
    assert both("code", {"text": "x = 1"}) == ("```\nx = 1\n```", "x = 1")


def test_code_containing_a_fence_gets_a_longer_fence():
    code = "```js\nalert(1)\n```"
    assert render_markdown(element("code", {"code": code, "language": "md"})) == f"````md\n{code}\n````"


# -- chart -----------------------------------------------------------------------------------


def test_chart_renders_title_and_data_summary():
    content = {"chart_type": "line", "title": "季度收入趋势", "data_summary": "Q1-Q4 收入呈上升趋势"}
    expected = "[图表: 季度收入趋势] Q1-Q4 收入呈上升趋势"
    assert both("chart", content) == (expected, expected)


def test_chart_without_title_uses_the_summary():
    assert both("chart", {"data_summary": "up"}, summary="Trend") == ("[图表: Trend] up", "[图表: Trend] up")
    assert both("chart", {}, summary="Trend") == ("[图表: Trend]", "[图表: Trend]")


# -- image -----------------------------------------------------------------------------------


def test_image_with_url_renders_as_markdown_image():
    content = {"url": "https://x.test/a.png", "alt": "Logo [v2]", "description": "The company logo"}
    assert both("image", content) == (
        "![Logo \\[v2\\]](https://x.test/a.png)",
        "[图片: The company logo] https://x.test/a.png",
    )


def test_image_url_with_spaces_is_wrapped_in_angle_brackets():
    assert render_markdown(element("image", {"url": "file:///a b.png", "alt": "a"})) == "![a](<file:///a b.png>)"


def test_image_without_url_renders_its_description():
    assert both("image", {"description": "A cat"}) == ("[图片: A cat]", "[图片: A cat]")
    assert both("image", {}, summary="Chart image") == ("[图片: Chart image]", "[图片: Chart image]")


# -- link / formula --------------------------------------------------------------------------


def test_link_renders_text_and_url():
    assert both("link", {"text": "Spec", "url": "https://x.test/spec"}) == (
        "[Spec](https://x.test/spec)",
        "Spec (https://x.test/spec)",
    )


def test_link_without_text_shows_the_url():
    assert both("link", {"url": "https://x.test"}) == ("[https://x.test](https://x.test)", "https://x.test")


def test_formula_renders_between_dollars():
    assert both("formula", {"expression": "E = mc^2"}) == ("$ E = mc^2 $", "E = mc^2")


# -- other categories and fallbacks -----------------------------------------------------------

OTHERS = sorted(ELEMENT_CATEGORIES - {"heading", "text", "table", "list", "code", "chart", "image", "link", "formula"})


@pytest.mark.parametrize("category", OTHERS)
def test_other_categories_render_category_and_summary(category):
    expected = f"[{category}: Q3 note]"
    assert both(category, {"anything": 1}, summary="Q3 note") == (expected, expected)


def test_other_category_without_summary_shows_the_element_id():
    assert both("widget", {}, summary=None, element_id="w-7") == ("[widget: w-7]", "[widget: w-7]")
    assert both("widget", {}, summary="", element_id="w-8") == ("[widget: w-8]", "[widget: w-8]")


def test_fallback_summary_is_one_line():
    assert both("form", {}, summary="Sign-up\nform") == ("[form: Sign-up form]", "[form: Sign-up form]")


def test_unknown_category_is_rendered_like_other_categories():
    assert both("hologram", {}, summary="3D") == ("[hologram: 3D]", "[hologram: 3D]")


@pytest.mark.parametrize(("category", "content"), [
    ("heading", {"level": 1}),
    ("heading", {"level": 1, "text": ""}),
    ("text", {"text": ""}),
    ("table", {"headers": "not a list", "rows": 5}),
    ("list", {"items": []}),
    ("code", {"language": "py"}),
    ("chart", {"chart_type": "bar"}),
    ("image", {"alt": ""}),
    ("link", {"text": "no url"}),
    ("formula", {"latex": "x"}),
])  # fmt: skip
def test_content_missing_what_its_category_needs_falls_back(category, content):
    expected = f"[{category}: el-1]"
    assert both(category, content, summary=None) == (expected, expected)


# -- pages and documents ----------------------------------------------------------------------

SPEC_PAGE = {
    "page_index": 0,
    "title": "概览",
    "doc_ref": "rpt-2026",
    "uri": "dpe://com.example.docs/rpt-2026/pages/0",
    "elements": [
        {
            "element_id": "h-001",
            "category": "heading",
            "summary": "2026 年度总结",
            "content": {"level": 1, "text": "2026 年度总结"},
        },
        {"element_id": "txt-001", "category": "text", "summary": "报告引言段落", "content": {"text": "本报告总结了..."}},
        {
            "element_id": "tbl-001",
            "category": "table",
            "summary": "季度收入对比表",
            "content": {"headers": ["季度", "收入（万元）"], "rows": [["Q1", "1,250"], ["Q2", "1,380"]]},
        },
        {
            "element_id": "chart-001",
            "category": "chart",
            "summary": "季度收入趋势图",
            "content": {"chart_type": "line", "title": "季度收入趋势", "data_summary": "Q4 最高"},
        },
    ],
    "element_count": 4,
}


def test_spec_page_renders_its_elements_separated_by_blank_lines():
    page = from_wire(DPEPage, SPEC_PAGE)
    assert render_markdown(page) == (
        "# 2026 年度总结\n\n本报告总结了...\n\n"
        "| 季度 | 收入（万元） |\n| --- | --- |\n| Q1 | 1,250 |\n| Q2 | 1,380 |\n\n"
        "[图表: 季度收入趋势] Q4 最高"
    )
    assert render_text(page) == (
        "2026 年度总结\n\n本报告总结了...\n\n季度\t收入（万元）\nQ1\t1,250\nQ2\t1,380\n\n[图表: 季度收入趋势] Q4 最高"
    )


def test_empty_page_renders_empty():
    page = DPEPage(page_index=3, title="blank", uri="dpe://h/d/pages/3")
    assert render_markdown(page) == render_text(page) == ""


def test_level3_element_detail_renders_its_content():
    detail = from_wire(DPEElementDetail, {
        "element_id": "tbl-001", "category": "table", "doc_ref": "rpt-2026", "page_index": 0,
        "uri": "dpe://com.example.docs/rpt-2026/elements/tbl-001",
        "content": {"headers": ["季度"], "rows": [["Q1"]], "total_rows": 1, "total_columns": 1},
        "metadata": {"source_range": "A1:A2"},
    })  # fmt: skip
    assert render_markdown(detail) == "| 季度 |\n| --- |\n| Q1 |"


DOCUMENT = {
    "doc_ref": "rpt-2026",
    "uri": "dpe://com.example.docs/rpt-2026",
    "file_uri": "file:///data/reports/2026-annual.xlsx",
    "file_type": "xlsx",
    "title": "2026 年度报告",
    "page_count": 12,
    "keywords": ["财务", "年报"],
    "summary": "2026 年度财务与运营报告",
    "last_modified": "2026-01-15T08:30:00Z",
}
PAGES = {
    "pages": [
        {"page_index": 0, "title": "概览", "element_count": 8, "uri": "dpe://com.example.docs/rpt-2026/pages/0"},
        {"page_index": 1, "title": "收入|分析", "element_count": 15, "uri": "dpe://com.example.docs/rpt-2026/pages/1"},
    ],
    "page_offset": 0,
    "page_limit": 20,
    "page_total": 12,
}
METADATA_MD = (
    "# 2026 年度报告\n\n"
    "- uri: dpe://com.example.docs/rpt-2026\n"
    "- file_uri: file:///data/reports/2026-annual.xlsx\n"
    "- file_type: xlsx\n"
    "- page_count: 12\n"
    "- keywords: 财务, 年报\n"
    "- last_modified: 2026-01-15T08:30:00Z\n\n"
    "2026 年度财务与运营报告"
)


def test_document_metadata_markdown_and_text():
    document = from_wire(DPEDocument, DOCUMENT)
    assert render_markdown(document) == METADATA_MD
    assert render_text(document) == METADATA_MD.replace("# ", "").replace("- ", "")


def test_document_with_page_index():
    document = from_wire(DPEDocument, {**DOCUMENT, **PAGES})
    assert render_markdown(document) == METADATA_MD + (
        "\n\n## Pages 0–1 of 12\n\n"
        "| page_index | title | element_count | uri |\n| --- | --- | --- | --- |\n"
        "| 0 | 概览 | 8 | dpe://com.example.docs/rpt-2026/pages/0 |\n"
        "| 1 | 收入\\|分析 | 15 | dpe://com.example.docs/rpt-2026/pages/1 |"
    )
    assert render_text(document).endswith(
        "\n\nPages 0–1 of 12:\n"
        "page 0: 概览 (8 elements) dpe://com.example.docs/rpt-2026/pages/0\n"
        "page 1: 收入|分析 (15 elements) dpe://com.example.docs/rpt-2026/pages/1"
    )


def test_document_page_index_past_the_end():
    document = from_wire(DPEDocument, {**DOCUMENT, "pages": [], "page_offset": 40, "page_total": 12})
    assert render_markdown(document).endswith("\n\n## Pages: none from 40 (of 12)")
    assert render_text(document).endswith("\n\nPages: none from 40 (of 12):")


def test_minimal_document_leaves_out_absent_fields():
    document = DPEDocument(doc_ref="d", uri="dpe://h/d", file_uri="file:///d", file_type="pdf", title="D", page_count=0)
    assert render_markdown(document) == (
        "# D\n\n- uri: dpe://h/d\n- file_uri: file:///d\n- file_type: pdf\n- page_count: 0"
    )


def test_other_objects_are_refused():
    with pytest.raises(TypeError, match="cannot render DPEPageSummary"):
        render_markdown(DPEPageSummary(page_index=0, title="t", element_count=0, uri="dpe://h/d/pages/0"))


# -- robustness ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
content_keys = st.sampled_from(
    ["text", "level", "headers", "rows", "items", "ordered", "code", "language", "title", "data_summary",
     "url", "src", "alt", "description", "href", "expression"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    category=st.sampled_from(sorted(ELEMENT_CATEGORIES) + ["unknown"]),
    content=st.dictionaries(content_keys | st.text(max_size=5), json_values, max_size=6),
    summary=st.none() | st.text(max_size=10),
)
def test_any_content_renders_to_a_string(category, content, summary):
    item = element(category, content, summary=summary)
    assert isinstance(render_markdown(item), str)
    assert isinstance(render_text(item), str)
