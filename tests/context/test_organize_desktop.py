"""The Desktop organiser (spec/desktop.md "Desktop 组织策略" steps 1-5 and 渲染规则)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from smcp_sync.context import CallRecord, Window, organize_desktop
from smcp_sync.protocol.models import BlobResourceContents, TextResourceContents

pytestmark = pytest.mark.timeout(30)


def text(uri: str, body: str) -> TextResourceContents:
    return TextResourceContents(uri=uri, text=body)


def blob(uri: str) -> BlobResourceContents:
    return BlobResourceContents(uri=uri, blob="AAEC", mime_type="image/png")


def window(server: str, uri: str, *bodies: str) -> Window:
    """A window whose contents are one text per body (the body defaults to its path)."""
    return Window(server=server, uri=uri, contents=[text(uri, b) for b in bodies or (uri.rsplit("/", 1)[-1],)])


def calls(*servers: str) -> list[CallRecord]:
    """A tool-call history: all the organisers read of a record is its `server`."""
    return [SimpleNamespace(server=s) for s in servers]


def uris(desktop: list[str]) -> list[str]:
    return [entry.split("\n\n", 1)[0] for entry in desktop]


# -- rendering ------------------------------------------------------------------------------


def test_spec_example_two_windows():
    windows = [
        window("logger", "window://com.example.logger", "[2026-02-14 10:30:01] INFO: 操作完成"),
        window("browser", "window://com.example.browser/main?priority=80", "<html>当前页面内容...</html>"),
    ]
    assert organize_desktop(windows, None, calls("logger", "browser")) == [
        "window://com.example.browser/main?priority=80\n\n<html>当前页面内容...</html>",
        "window://com.example.logger\n\n[2026-02-14 10:30:01] INFO: 操作完成",
    ]


def test_body_joins_every_text_content_with_blank_lines():
    w = Window(server="s", uri="window://s/w", contents=[text("window://s/w", "one"), text("window://s/w", "two")])
    assert organize_desktop([w], None, []) == ["window://s/w\n\none\n\ntwo"]


def test_window_without_text_renders_as_its_uri_alone():
    assert organize_desktop([window("s", "window://s/w", "")], None, []) == ["window://s/w"]


def test_the_listed_uri_string_is_rendered_verbatim():
    listed = "WINDOW://s/a%20b?fullscreen=YES&extra=1"
    assert organize_desktop([window("s", listed, "x")], None, []) == [f"{listed}\n\nx"]


def test_blob_contents_are_skipped_with_a_warning(caplog):
    uri = "window://s/mixed"
    mixed = Window(server="s", uri=uri, contents=[blob(uri), text(uri, "t")])
    with caplog.at_level(logging.WARNING, logger="smcp_sync.context.desktop"):
        assert organize_desktop([mixed], None, []) == ["window://s/mixed\n\nt"]
    assert "window://s/mixed" in caplog.text and "blob" in caplog.text


# -- step 1: filtering ---------------------------------------------------------------------


def test_empty_invalid_and_blob_only_windows_are_filtered_out(caplog):
    windows = [
        Window(server="s", uri="window://s/empty", contents=[]),
        Window(server="s", uri="window://s/blob", contents=[blob("window://s/blob")]),
        window("s", "dpe://s/doc", "not a window"),
        window("s", "window://s/w?priority=500", "bad priority"),
        window("s", "window:///no-host", "no host"),
        window("s", "window://s/ok", "ok"),
    ]
    with caplog.at_level(logging.WARNING, logger="smcp_sync.context.desktop"):
        assert organize_desktop(windows, None, []) == ["window://s/ok\n\nok"]
    assert "rule 3: priority" in caplog.text and "rule 1: scheme" in caplog.text


def test_nothing_to_show_gives_an_empty_desktop():
    assert organize_desktop([], None, calls("a")) == []


# -- step 2: server order --------------------------------------------------------------------


def test_servers_follow_reverse_deduplicated_history_then_name():
    windows = [window(server, f"window://{server}/w") for server in ("delta", "alpha", "charlie", "bravo")]
    desktop = organize_desktop(windows, None, calls("charlie", "bravo", "charlie", "unknown"))
    assert uris(desktop) == ["window://charlie/w", "window://bravo/w", "window://alpha/w", "window://delta/w"]


def test_grouping_is_by_server_name_not_uri_host():
    windows = [
        window("one", "window://shared/a"),
        window("two", "window://shared/b"),
        window("one", "window://shared/c"),
    ]
    assert uris(organize_desktop(windows, None, calls("two"))) == [
        "window://shared/b", "window://shared/a", "window://shared/c",
    ]  # fmt: skip


# -- step 3: priority -----------------------------------------------------------------------


def test_windows_of_a_server_by_priority_descending_default_zero_ties_in_input_order():
    windows = [
        window("s", "window://s/none"),
        window("s", "window://s/low?priority=10"),
        window("s", "window://s/top?priority=100"),
        window("s", "window://s/zero?priority=0"),
        window("s", "window://s/low2?priority=10"),
    ]
    assert uris(organize_desktop(windows, None, [])) == [
        "window://s/top?priority=100",
        "window://s/low?priority=10",
        "window://s/low2?priority=10",
        "window://s/none",
        "window://s/zero?priority=0",
    ]


def test_priority_only_orders_within_a_server():
    windows = [window("a", "window://a/w?priority=1"), window("b", "window://b/w?priority=99")]
    assert uris(organize_desktop(windows, None, calls("a"))) == ["window://a/w?priority=1", "window://b/w?priority=99"]


# -- step 4: fullscreen ----------------------------------------------------------------------


def test_fullscreen_keeps_only_the_first_fullscreen_window_of_that_server():
    windows = [
        window("s", "window://s/high?priority=90"),
        window("s", "window://s/fs1?fullscreen=true&priority=1"),
        window("s", "window://s/fs2?fullscreen=yes&priority=80"),
        window("s", "window://s/not?fullscreen=off&priority=70"),
    ]
    assert uris(organize_desktop(windows, None, [])) == ["window://s/fs1?fullscreen=true&priority=1"]


def test_fullscreen_is_per_server():
    windows = [
        window("a", "window://a/fs?fullscreen=1"),
        window("a", "window://a/other?priority=50"),
        window("b", "window://b/x?priority=5"),
        window("b", "window://b/y?priority=6"),
        window("c", "window://c/fs?fullscreen=on"),
        window("c", "window://c/fs-later?fullscreen=true&priority=100"),
    ]
    assert uris(organize_desktop(windows, None, [])) == [
        "window://a/fs?fullscreen=1",
        "window://b/y?priority=6",
        "window://b/x?priority=5",
        "window://c/fs?fullscreen=on",
    ]


def test_skipped_windows_do_not_count_as_the_first_fullscreen():
    windows = [
        Window(server="s", uri="window://s/empty-fs?fullscreen=true", contents=[]),
        window("s", "window://s/fs?fullscreen=true"),
    ]
    assert uris(organize_desktop(windows, None, [])) == ["window://s/fs?fullscreen=true"]


# -- step 5: size ----------------------------------------------------------------------------

SIZED = [
    window("a", "window://a/1?priority=2"),
    window("a", "window://a/2?priority=1"),
    window("b", "window://b/1"),
    window("c", "window://c/fs?fullscreen=true"),
    window("c", "window://c/hidden"),
]


@pytest.mark.parametrize(("size", "expected"), [
    (None, ["window://a/1?priority=2", "window://a/2?priority=1", "window://b/1", "window://c/fs?fullscreen=true"]),
    (100, ["window://a/1?priority=2", "window://a/2?priority=1", "window://b/1", "window://c/fs?fullscreen=true"]),
    (3, ["window://a/1?priority=2", "window://a/2?priority=1", "window://b/1"]),
    (1, ["window://a/1?priority=2"]),
    (0, []),
    (-2, []),
])  # fmt: skip
def test_size_is_a_global_cap_across_servers(size, expected):
    assert uris(organize_desktop(SIZED, size, [])) == expected


def test_size_cut_follows_history_order():
    assert uris(organize_desktop(SIZED, 2, calls("b", "c"))) == ["window://c/fs?fullscreen=true", "window://b/1"]


# -- layout metadata (spec-0.3/desktop.md "Window 资源元数据") ---------------------------------


def test_declared_priority_orders_windows_on_the_query_forms_scale():
    windows = [
        Window(server="s", uri="window://s/a", contents=[text("window://s/a", "a")], priority=0.3),
        window("s", "window://s/b?priority=50"),  # 50 / 100
        Window(server="s", uri="window://s/c", contents=[text("window://s/c", "c")], priority=0.7),
        window("s", "window://s/d"),  # nothing declared: 0
    ]
    assert uris(organize_desktop(windows, None, [])) == [
        "window://s/c", "window://s/b?priority=50", "window://s/a", "window://s/d",
    ]  # fmt: skip


def test_declared_metadata_wins_over_the_query():
    windows = [
        Window(server="s", uri="window://s/a?priority=90", contents=[text("window://s/a", "a")], priority=0.1),
        Window(server="s", uri="window://s/b?fullscreen=true", contents=[text("window://s/b", "b")], fullscreen=False),
        window("s", "window://s/c?priority=20"),
    ]
    assert uris(organize_desktop(windows, None, [])) == [
        "window://s/c?priority=20", "window://s/a?priority=90", "window://s/b?fullscreen=true",
    ]  # fmt: skip


def test_declared_fullscreen_shows_the_first_such_window_of_its_server_alone():
    windows = [
        Window(server="s", uri="window://s/a", contents=[text("window://s/a", "a")], priority=1.0),
        Window(server="s", uri="window://s/b", contents=[text("window://s/b", "b")], fullscreen=True),
        Window(server="s", uri="window://s/c", contents=[text("window://s/c", "c")], fullscreen=True),
        Window(server="t", uri="window://t/d", contents=[text("window://t/d", "d")]),
    ]
    assert uris(organize_desktop(windows, None, [])) == ["window://s/b", "window://t/d"]
