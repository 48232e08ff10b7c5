"""window:// URIs (spec/desktop.md "Window URI 规范"): every rule, examples, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.protocol.errors import BadRequestError, ErrorCode
from smcp_sync.protocol.window_uri import WindowURI, is_window_uri, parse_window_uri

pytestmark = pytest.mark.timeout(60)

HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;="


def refused(text: object) -> BadRequestError:
    with pytest.raises(BadRequestError) as caught:
        parse_window_uri(text)  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.BAD_REQUEST
    return caught.value


# -- the spec's examples ---------------------------------------------------------------


def test_full_example_parses_to_every_component():
    uri = parse_window_uri("window://com.example.browser/main/tab1?priority=80&fullscreen=true")
    assert uri == WindowURI(host="com.example.browser", path=("main", "tab1"), priority=80, fullscreen=True)


def test_minimal_example_has_no_path_and_no_layout_hints():
    uri = parse_window_uri("window://com.example.logger")
    assert (uri.host, uri.path, uri.priority, uri.fullscreen) == ("com.example.logger", (), None, None)


def test_special_characters_example_decodes_each_segment():
    uri = parse_window_uri("window://com.example.editor/src%2Fmain/file%20name")
    assert uri.path == ("src/main", "file name")


# -- rule 1: scheme ----------------------------------------------------------------------


def test_rule1_scheme_is_case_insensitive():
    assert parse_window_uri("WINDOW://h/x").host == "h"


@pytest.mark.parametrize(("text", "got"), [("http://h/x", "'http'"), ("dpe://h", "'dpe'"), ("h/x", "none")])
def test_rule1_other_scheme_is_refused(text, got):
    error = refused(text)
    assert f"rule 1: scheme must be 'window', got {got}" in error.message
    assert error.details == {"uri": text}


# -- rule 2: host ------------------------------------------------------------------------


def test_rule2_host_is_kept_verbatim():
    assert parse_window_uri("window://Com.Example_App~1/x").host == "Com.Example_App~1"


@pytest.mark.parametrize("text", ["window://", "window:///main", "window:main", "window://?priority=1"])
def test_rule2_empty_host_is_refused(text):
    assert "rule 2: host must not be empty" in refused(text).message


@pytest.mark.parametrize(("text", "host"), [("window://h:80/x", "'h:80'"), ("window://u@h", "'u@h'")])
def test_host_with_port_or_user_part_is_refused(text, host):
    assert f"host {host} may only contain" in refused(text).message


# -- rule 3: priority --------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("100", 100), ("55", 55), ("080", 80)])
def test_rule3_priority_in_range(value, expected):
    assert parse_window_uri(f"window://h/w?priority={value}").priority == expected


@pytest.mark.parametrize("value", ["-1", "101", "abc", "", "1.5", "+5", "1e2", "9" * 5000])
def test_rule3_priority_out_of_range_or_not_integer(value):
    message = refused(f"window://h/w?priority={value}").message
    assert "rule 3: priority must be an integer in [0, 100], got" in message
    assert repr(value)[:20] in message


# -- rule 4: fullscreen ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("1", True), ("yes", True), ("on", True), ("TRUE", True), ("On", True),
     ("false", False), ("0", False), ("no", False), ("off", False), ("False", False)],
)  # fmt: skip
def test_rule4_fullscreen_boolean_words(value, expected):
    assert parse_window_uri(f"window://h/w?fullscreen={value}").fullscreen is expected


@pytest.mark.parametrize("value", ["maybe", "", "2", "tru"])
def test_rule4_fullscreen_other_words_are_refused(value):
    message = refused(f"window://h/w?fullscreen={value}").message
    assert f"rule 4: fullscreen must be one of true/1/yes/on or false/0/no/off, got {value!r}" in message


# -- rule 5: path segments ---------------------------------------------------------------


def test_rule5_encoded_slash_stays_one_segment_and_utf8_decodes():
    uri = parse_window_uri("window://h/c%2Fd/%E6%96%87%E6%A1%A3/raw文档")
    assert uri.path == ("c/d", "文档", "raw文档")


def test_lone_slash_after_host_means_no_path():
    assert parse_window_uri("window://h/").path == ()


@pytest.mark.parametrize(("text", "why"), [
    ("window://h/a//b", "empty path segment"),
    ("window://h/a/", "empty path segment"),
    ("window://h/%zz", "'%' at position 11 does not start a %XX escape"),
    ("window://h/%FF", "not valid UTF-8"),
])  # fmt: skip
def test_rule5_bad_segments_are_refused(text, why):
    assert why in refused(text).message


# -- shared syntax -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["window://h/a b", "window://h/a\tb", "window://h/a\nb", " window://h", "window://\0"])
def test_whitespace_and_control_characters_are_refused(text):
    assert "whitespace or control character" in refused(text).message


def test_fragment_is_refused():
    assert "fragment" in refused("window://h/a#b").message


def test_layout_parameter_given_twice_is_refused():
    assert "'priority' given more than once" in refused("window://h?priority=1&priority=2").message


def test_unknown_parameters_are_ignored_not_refused():
    uri = parse_window_uri("window://h/w?v=2&priority=7&v=3")
    assert uri == WindowURI(host="h", path=("w",), priority=7)
    assert uri.build() == "window://h/w?priority=7"


@pytest.mark.parametrize("value", [None, 42, b"window://h", ["window://h"]])
def test_non_string_input_is_refused(value):
    assert "expected a string" in refused(value).message


def test_huge_input_gives_a_short_message():
    error = refused("http://" + "x" * 100_000)
    assert len(error.message) < 400
    assert error.details["uri"].startswith("http://xxx")


# -- building ----------------------------------------------------------------------------


def test_build_encodes_segments_and_writes_canonical_query():
    uri = WindowURI(host="h", path=["src/main", "file name", "文"], priority=5, fullscreen=False)
    assert uri.build() == "window://h/src%2Fmain/file%20name/%E6%96%87?priority=5&fullscreen=false"
    assert str(uri) == uri.build()
    assert uri.path == ("src/main", "file name", "文")


def test_build_of_a_parse_is_canonical():
    uri = parse_window_uri("Window://h/a?fullscreen=YES&priority=007")
    assert uri.build() == "window://h/a?priority=7&fullscreen=true"


@pytest.mark.parametrize(("fields", "why"), [
    ({"host": ""}, "rule 2: host must not be empty"),
    ({"host": "a/b"}, "host 'a/b' may only contain"),
    ({"host": "h", "path": ("a", "")}, "rule 5: path segment must be a non-empty string, got ''"),
    ({"host": "h", "path": "abc"}, "rule 5: path must be a list or tuple of segments"),
    ({"host": "h", "path": ("\ud800",)}, "is not valid Unicode text"),
    ({"host": "h", "priority": 101}, "rule 3: priority must be an integer in [0, 100], got 101"),
    ({"host": "h", "priority": True}, "rule 3: priority must be an integer"),
    ({"host": "h", "fullscreen": "yes"}, "rule 4: fullscreen must be a bool, got 'yes'"),
])  # fmt: skip
def test_constructor_validates_like_the_parser(fields, why):
    with pytest.raises(BadRequestError) as caught:
        WindowURI(**fields)
    assert why in caught.value.message
    assert caught.value.message.startswith("invalid window URI: ")


def test_is_window_uri():
    assert is_window_uri("window://h/a?priority=3")
    assert not is_window_uri("window://h?priority=300")
    assert not is_window_uri("dpe://h/doc")
    assert not is_window_uri(None)


# -- properties --------------------------------------------------------------------------

utf8_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
window_uris = st.builds(
    WindowURI,
    host=st.text(HOST_CHARS, min_size=1, max_size=20),
    path=st.lists(utf8_text, max_size=4).map(tuple),
    priority=st.none() | st.integers(0, 100),
    fullscreen=st.none() | st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(window_uris)
def test_build_then_parse_round_trips(uri):
    built = uri.build()
    assert parse_window_uri(built) == uri
    assert parse_window_uri(built).build() == built


url_ish = st.builds(
    "".join,
    st.lists(
        st.sampled_from(["window", "WINDOW", "dpe", "://", ":", "/", "//", "?", "&", "=", "#", "%", "%2F",
                         "%E6%96", "%zz", "h", "com.example", "priority", "fullscreen", "true", "off", "100",
                         "-1", "@", "[", " "])
        | st.text(max_size=3),
        max_size=12,
    ),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.text() | url_ish)
def test_any_text_parses_or_is_refused_with_400(text):
    try:
        uri = parse_window_uri(text)
    except BadRequestError as exc:
        assert exc.code == 400 and exc.message.startswith("invalid window URI")
    else:
        assert parse_window_uri(uri.build()) == uri
