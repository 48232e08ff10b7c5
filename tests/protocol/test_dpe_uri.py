"""dpe:// URIs (spec/finder.md "dpe:// URI 协议"): the four levels, the eight rules, building,
navigation helpers, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.protocol.dpe_uri import DPEURI, MAX_INDEX, is_dpe_uri, parse_dpe_uri
from smcp_sync.protocol.errors import ErrorCode, FinderError, InvalidURIError
from smcp_sync.protocol.models import ELEMENT_CATEGORIES

pytestmark = pytest.mark.timeout(60)

HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;="
DOC = "dpe://com.example.docs/rpt-2026"


def refused(text: object) -> InvalidURIError:
    with pytest.raises(InvalidURIError) as caught:
        parse_dpe_uri(text)  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.INVALID_DPE_URI == 4204
    assert isinstance(caught.value, FinderError)
    return caught.value


# -- the four levels (spec examples) -------------------------------------------------------


def test_level0_catalogue():
    uri = parse_dpe_uri("dpe://com.example.docs")
    assert uri == DPEURI(host="com.example.docs")
    assert uri.level == 0


def test_level1_document_with_page_index_query():
    uri = parse_dpe_uri(f"{DOC}?depth=pages&offset=0&limit=10")
    assert uri == DPEURI(host="com.example.docs", doc_ref="rpt-2026", depth="pages", offset=0, limit=10)
    assert uri.level == 1


def test_level2_page_with_categories_and_format():
    uri = parse_dpe_uri(f"{DOC}/pages/0?categories=table,pivot_table&format=markdown")
    assert (uri.doc_ref, uri.page_index, uri.element_id) == ("rpt-2026", 0, None)
    assert (uri.categories, uri.format) == (("table", "pivot_table"), "markdown")
    assert uri.level == 2


def test_level3_element():
    uri = parse_dpe_uri(f"{DOC}/elements/tbl-001?format=json")
    assert (uri.doc_ref, uri.element_id, uri.page_index, uri.format) == ("rpt-2026", "tbl-001", None, "json")
    assert uri.level == 3


def test_absent_parameters_stay_none():
    uri = parse_dpe_uri(DOC)
    assert (uri.format, uri.depth, uri.offset, uri.limit, uri.categories) == (None,) * 5


# -- rule 1: scheme / rule 2: host ---------------------------------------------------------


def test_rule1_scheme_is_case_insensitive():
    assert parse_dpe_uri("DPE://h/d").doc_ref == "d"


@pytest.mark.parametrize(
    ("text", "got"), [("window://h/d", "'window'"), ("https://h/d", "'https'"), ("h/d", "none"), ("", "none")]
)
def test_rule1_other_scheme_is_refused(text, got):
    error = refused(text)
    assert f"rule 1: scheme must be 'dpe', got {got}" in error.message
    assert error.details == {"uri": text}


def test_rule2_reverse_domain_host():
    assert parse_dpe_uri("dpe://com.example.docs/d").host == "com.example.docs"


@pytest.mark.parametrize("text", ["dpe:", "dpe://", "dpe:///doc", "dpe:doc", "dpe://?format=json"])
def test_rule2_empty_host_is_refused(text):
    assert "rule 2: host must not be empty" in refused(text).message


@pytest.mark.parametrize("text", ["dpe://h:1/d", "dpe://a@h/d", "dpe://[::1]/d", "dpe://[x/d", "dpe://h%41/d"])
def test_host_outside_reg_name_characters_is_refused(text):
    assert "host" in refused(text).message


# -- rule 3: sub-path ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "page"), [("pages/0", 0), ("pages/12", 12), ("pages/007", 7), (f"pages/{MAX_INDEX}", MAX_INDEX)]
)
def test_rule3_page_index_non_negative_integer(path, page):
    assert parse_dpe_uri(f"{DOC}/{path}").page_index == page


@pytest.mark.parametrize(("path", "why"), [
    ("pages/-1", "rule 3: page index must be an integer in [0, 9223372036854775807], got '-1'"),
    ("pages/x", "rule 3: page index must be an integer"),
    ("pages/1.0", "rule 3: page index must be an integer"),
    (f"pages/{MAX_INDEX + 1}", "rule 3: page index must be an integer"),
    ("pages", "rule 3: sub-path 'pages' must be pages/{N} or elements/{ID}"),
    ("elements", "rule 3: sub-path 'elements' must be pages/{N} or elements/{ID}"),
    ("sheets/1", "rule 3: sub-path 'sheets/1' must be"),
    ("pages/1/extra", "rule 3: sub-path 'pages/1/extra' must be"),
    ("elements/a/b", "rule 3: sub-path 'elements/a/b' must be"),
    ("elements/", "empty path segment"),
    ("pages/", "empty path segment"),
])  # fmt: skip
def test_rule3_bad_sub_path_is_refused(path, why):
    assert why in refused(f"{DOC}/{path}").message


def test_rule3_element_id_any_non_empty_string_percent_decoded():
    assert parse_dpe_uri(f"{DOC}/elements/tbl%2F001%20%E8%A1%A8").element_id == "tbl/001 表"


def test_empty_doc_ref_is_refused():
    assert "empty path segment" in refused("dpe://h//pages/0").message


def test_doc_ref_may_be_url_encoded():
    uri = parse_dpe_uri("dpe://h/reports%2F2026%20annual/pages/3")
    assert (uri.doc_ref, uri.page_index) == ("reports/2026 annual", 3)
    assert uri.build() == "dpe://h/reports%2F2026%20annual/pages/3"


# -- rules 4-8: query parameters ----------------------------------------------------------


@pytest.mark.parametrize("value", ["json", "markdown", "text"])
def test_rule4_format_values(value):
    assert parse_dpe_uri(f"{DOC}?format={value}").format == value


@pytest.mark.parametrize("value", ["pdf", "JSON", "", "md"])
def test_rule4_other_format_is_refused(value):
    message = refused(f"{DOC}?format={value}").message
    assert f"rule 4: format must be one of json, markdown, text, got {value!r}" in message


@pytest.mark.parametrize("value", ["metadata", "pages"])
def test_rule5_depth_values(value):
    assert parse_dpe_uri(f"{DOC}?depth={value}").depth == value


@pytest.mark.parametrize("value", ["all", "page", ""])
def test_rule5_other_depth_is_refused(value):
    assert f"rule 5: depth must be one of metadata, pages, got {value!r}" in refused(f"{DOC}?depth={value}").message


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("5", 5), ("1000000", 1_000_000)])
def test_rule6_offset_non_negative(value, expected):
    assert parse_dpe_uri(f"{DOC}?offset={value}").offset == expected


@pytest.mark.parametrize("value", ["-1", "x", "", "1.5", "+1", "9" * 30])
def test_rule6_bad_offset_is_refused(value):
    message = refused(f"{DOC}?offset={value}").message
    assert "rule 6: offset must be an integer in [0, 9223372036854775807], got" in message


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("20", 20), ("100", 100)])
def test_rule7_limit_in_range(value, expected):
    assert parse_dpe_uri(f"{DOC}?limit={value}").limit == expected


@pytest.mark.parametrize("value", ["0", "101", "-5", "ten", ""])
def test_rule7_bad_limit_is_refused(value):
    assert f"rule 7: limit must be an integer in [1, 100], got {value!r}" in refused(f"{DOC}?limit={value}").message


def test_rule8_every_element_category_is_accepted():
    categories = sorted(ELEMENT_CATEGORIES)
    assert len(categories) == 19
    uri = parse_dpe_uri(f"{DOC}/pages/0?categories={','.join(categories)}")
    assert uri.categories == tuple(categories)


@pytest.mark.parametrize(
    ("value", "bad"), [("table,foo", "['foo']"), ("", "['']"), ("table,,list", "['']"), ("Table", "['Table']")]
)
def test_rule8_unknown_category_is_refused(value, bad):
    message = refused(f"{DOC}/pages/0?categories={value}").message
    assert f"rule 8: categories {bad} are not element types" in message


def test_parameters_on_other_levels_are_accepted():
    uri = parse_dpe_uri(f"{DOC}/pages/2?depth=pages&offset=3&limit=4")
    assert (uri.level, uri.depth, uri.offset, uri.limit) == (2, "pages", 3, 4)
    assert parse_dpe_uri("dpe://h?categories=table").categories == ("table",)


def test_unknown_parameter_is_refused():
    message = refused(f"{DOC}?fromat=markdown").message
    assert "unknown query parameter 'fromat'; expected one of format, depth, offset, limit, categories" in message


def test_parameter_given_twice_is_refused():
    assert "query parameter 'limit' given more than once" in refused(f"{DOC}?limit=1&limit=2").message


def test_percent_encoded_query_values_are_decoded_and_plus_is_literal():
    assert parse_dpe_uri(f"{DOC}/pages/0?categories=table%2Clist").categories == ("table", "list")
    assert "got '+1'" in refused(f"{DOC}?limit=+1").message


def test_empty_query_and_empty_fields_are_ignored():
    assert parse_dpe_uri(f"{DOC}?") == parse_dpe_uri(f"{DOC}?&&") == DPEURI(host="com.example.docs", doc_ref="rpt-2026")


# -- shared syntax and edge cases ------------------------------------------------------------


@pytest.mark.parametrize(("text", "why"), [
    ("", "rule 1"),
    ("dpe", "rule 1"),
    ("dpe://h/a b", "whitespace or control character ' '"),
    ("dpe://h/a\u2028b", "whitespace or control character"),
    ("dpe://h/d#frag", "fragment"),
    ("dpe://h/%", "does not start a %XX escape"),
    ("dpe://h/%C3%28", "not valid UTF-8"),
    ("dpe://h/d/", "empty path segment"),
])  # fmt: skip
def test_syntax_errors(text, why):
    assert why in refused(text).message


@pytest.mark.parametrize("value", [None, 3, b"dpe://h"])
def test_non_string_input_is_refused(value):
    assert "expected a string" in refused(value).message


# -- building and navigation ------------------------------------------------------------------


def test_build_is_canonical():
    text = "DPE://h/d/pages/01?categories=table&format=markdown&limit=05"
    assert parse_dpe_uri(text).build() == "dpe://h/d/pages/1?format=markdown&limit=5&categories=table"


def test_navigation_helpers():
    doc = DPEURI.document("com.example.docs", "rpt-2026")
    assert str(doc) == DOC and doc.level == 1
    assert str(doc.with_query(depth="pages", offset=0, limit=10)) == f"{DOC}?depth=pages&offset=0&limit=10"
    page = doc.with_query(depth="pages").page(3)
    assert str(page) == f"{DOC}/pages/3" and page.level == 2
    assert str(page.with_query(format="markdown", categories=["table", "chart"])) == (
        f"{DOC}/pages/3?format=markdown&categories=table,chart"
    )
    assert str(page.element("tbl/1")) == f"{DOC}/elements/tbl%2F1"
    assert page.with_query(format="text").with_query(format=None) == page


def test_navigation_from_catalogue_needs_a_doc_ref():
    with pytest.raises(InvalidURIError, match="rule 3: a pages/ or elements/ sub-path needs a doc-ref"):
        DPEURI(host="h").page(0)


def test_with_query_refuses_non_query_fields():
    with pytest.raises(TypeError, match=r"unknown dpe query parameters \['doc_ref'\]"):
        DPEURI(host="h").with_query(doc_ref="x")


@pytest.mark.parametrize(("fields", "why"), [
    ({"host": ""}, "rule 2"),
    ({"host": "h", "doc_ref": ""}, "doc-ref must be a non-empty string"),
    ({"host": "h", "doc_ref": "d", "page_index": 1, "element_id": "e"}, "rule 3: a URI addresses a page or an element"),
    ({"host": "h", "doc_ref": "d", "page_index": -1}, "rule 3: page index must be an integer"),
    ({"host": "h", "doc_ref": "d", "page_index": True}, "rule 3: page index must be an integer"),
    ({"host": "h", "doc_ref": "d", "element_id": ""}, "rule 3: element id must be a non-empty string"),
    ({"host": "h", "format": "html"}, "rule 4"),
    ({"host": "h", "depth": "deep"}, "rule 5"),
    ({"host": "h", "offset": -1}, "rule 6"),
    ({"host": "h", "limit": 0}, "rule 7"),
    ({"host": "h", "limit": 101}, "rule 7"),
    ({"host": "h", "categories": []}, "rule 8: categories must be a non-empty list"),
    ({"host": "h", "categories": "table"}, "rule 8: categories must be a non-empty list"),
    ({"host": "h", "categories": ["table", 3]}, "rule 8: categories [3] are not element types"),
])  # fmt: skip
def test_constructor_validates_like_the_parser(fields, why):
    with pytest.raises(InvalidURIError) as caught:
        DPEURI(**fields)
    assert why in caught.value.message
    assert caught.value.code == 4204


def test_is_dpe_uri():
    assert is_dpe_uri(f"{DOC}/pages/0")
    assert not is_dpe_uri(f"{DOC}/pages/-1")
    assert not is_dpe_uri("window://h")
    assert not is_dpe_uri(None)


# -- properties ------------------------------------------------------------------------------

utf8_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
query = {
    "format": st.none() | st.sampled_from(["json", "markdown", "text"]),
    "depth": st.none() | st.sampled_from(["metadata", "pages"]),
    "offset": st.none() | st.integers(0, MAX_INDEX),
    "limit": st.none() | st.integers(1, 100),
    "categories": st.none() | st.lists(st.sampled_from(sorted(ELEMENT_CATEGORIES)), min_size=1, max_size=4).map(tuple),
}
hosts = st.text(HOST_CHARS, min_size=1, max_size=20)
dpe_uris = st.one_of(
    st.builds(DPEURI, host=hosts, **query),
    st.builds(DPEURI, host=hosts, doc_ref=utf8_text, **query),
    st.builds(DPEURI, host=hosts, doc_ref=utf8_text, page_index=st.integers(0, MAX_INDEX), **query),
    st.builds(DPEURI, host=hosts, doc_ref=utf8_text, element_id=utf8_text, **query),
)


@settings(max_examples=200, deadline=None)
@given(dpe_uris)
def test_build_then_parse_round_trips(uri):
    built = uri.build()
    assert parse_dpe_uri(built) == uri
    assert parse_dpe_uri(built).build() == built


url_ish = st.builds(
    "".join,
    st.lists(
        st.sampled_from(["dpe", "DPE", "window", "://", ":", "/", "//", "?", "&", "=", "#", "%", "%2F", "%E8%A1",
                         "%zz", "h", "com.example.docs", "doc", "pages", "elements", "0", "-1", "99999999999999999999",
                         "format", "markdown", "depth", "offset", "limit", "101", "categories", "table", ",", "@", "["])
        | st.text(max_size=3),
        max_size=14,
    ),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.text() | url_ish)
def test_any_text_parses_or_is_refused_with_4204(text):
    try:
        uri = parse_dpe_uri(text)
    except InvalidURIError as exc:
        assert exc.code == 4204 and exc.message.startswith("invalid dpe URI")
    else:
        assert parse_dpe_uri(uri.build()) == uri
