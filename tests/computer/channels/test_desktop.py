"""The Desktop on the Computer (spec/desktop.md): windows of real MCP servers organised by
the spec's rules, directed fetch of one window, and update announcements from the
bundled window server."""

from __future__ import annotations

import logging
import re
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer, allow_all
from smcp_sync.protocol import BadRequestError, events
from smcp_sync.computer import ChannelOptions

from ..helpers import FAST
from ..resource_helpers import QUICK, WINDOW_SERVER, Announcements, module_config, resource_config

pytestmark = pytest.mark.timeout(60)


def window(host: str, name: str, query: str = "", text: str | None = None) -> dict[str, Any]:
    uri = f"window://{host}/{name}{query}"
    return {"uri": uri, "name": name, "text": name if text is None else text}


ALPHA = [  # listing order matters only for ties and for "the first fullscreen window"
    window("alpha", "low", "?priority=10"),
    window("alpha", "top", "?priority=90"),
    window("alpha", "plain"),  # no priority: 0
    window("alpha", "mid", "?priority=50"),
    window("alpha", "broken", "?priority=500"),  # invalid: left out
    window("alpha", "empty", "?priority=5", text=""),  # no text: just its URI
]
BETA = [
    window("beta", "side", "?priority=99"),
    window("beta", "main", "?fullscreen=yes"),  # the first fullscreen window: the only one shown
    window("beta", "other", "?priority=1&fullscreen=true"),
]


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computer]:
    """Two window servers; listed as "zeta" then "alpha" (name order differs from config
    order). Tests may call tools (history) but change no window."""
    folder = tmp_path_factory.mktemp("desk")
    beta = resource_config("beta", folder / "beta.json", BETA, tool_meta={"touch": {"alias": "beta_touch"}})
    computer = Computer("desk", [resource_config("zeta", folder / "alpha.json", ALPHA), beta], policy=FAST, confirm=allow_all)
    yield computer.start()
    computer.close()


def uris(desktop: list[str]) -> list[str]:
    return [entry.split("\n\n", 1)[0] for entry in desktop]


def test_windows_are_organised_by_the_spec_rules(desk: Computer) -> None:
    desktop = desk.desktop()
    # servers by name without history (beta < zeta); within one, priority descending; the
    # fullscreen rule keeps beta's first fullscreen window only; an invalid URI is left out
    assert uris(desktop) == [
        "window://beta/main?fullscreen=yes",
        "window://alpha/top?priority=90",
        "window://alpha/mid?priority=50",
        "window://alpha/low?priority=10",
        "window://alpha/empty?priority=5",
        "window://alpha/plain",
    ]
    assert desktop[0] == "window://beta/main?fullscreen=yes\n\nmain"
    assert desktop[4] == "window://alpha/empty?priority=5"  # no text: the URI alone
    assert desk.desktop(desktop_size=2) == desktop[:2]
    assert desk.desktop(desktop_size=0) == [] and desk.desktop(desktop_size=-3) == []


def test_the_server_called_last_comes_first(desk: Computer) -> None:
    desk.call_tool("touch", {"uri": "window://alpha/plain"}, timeout=10)  # zeta's tool
    assert uris(desk.desktop(desktop_size=2)) == ["window://alpha/top?priority=90", "window://alpha/mid?priority=50"]
    desk.call_tool("beta_touch", {"uri": "window://beta/side?priority=99"}, timeout=10)
    assert uris(desk.desktop(desktop_size=2)) == ["window://beta/main?fullscreen=yes", "window://alpha/top?priority=90"]


def test_a_directed_fetch_returns_exactly_that_window(desk: Computer) -> None:
    # even a window the fullscreen rule hides: the Agent asked for it by name
    assert desk.desktop(window="window://beta/side?priority=99") == ["window://beta/side?priority=99\n\nside"]
    assert desk.desktop(window="window://alpha/top?priority=90", desktop_size=5) == [
        "window://alpha/top?priority=90\n\ntop"
    ]
    assert desk.desktop(window="window://alpha/top") == []  # not the listed URI: no such window


def test_bad_desktop_arguments_are_clear_errors(desk: Computer) -> None:
    with pytest.raises(BadRequestError, match="invalid window URI 'window://alpha/top\\?priority=101'.*rule 3"):
        desk.desktop(window="window://alpha/top?priority=101")
    with pytest.raises(BadRequestError, match="desktop_size must be an integer or null, got '3'"):
        desk.desktop(desktop_size="3")  # type: ignore[arg-type]


@pytest.fixture
def live_desktop(computer_factory: Any) -> Any:
    def make(*args: str) -> tuple[Computer, Announcements]:
        config = module_config("windows", WINDOW_SERVER, *args)
        computer = computer_factory(config, start=False, channels=ChannelOptions(update_debounce=QUICK))
        announced = Announcements()
        computer.add_update_listener(announced)
        return computer.start(), announced

    return make


def test_the_window_servers_fullscreen_monitor_updates_and_is_announced(live_desktop: Any) -> None:
    computer, announced = live_desktop("--interval", "0.2")
    [first] = computer.desktop()
    monitor = "window://com.example.desktop/monitor?priority=20&fullscreen=true"
    assert first.startswith(f"{monitor}\n\nSystem monitor — tick ")
    tick = int(re.search(r"tick (\d+)", first).group(1))
    announced.wait_for(events.UPDATE_DESKTOP, 3)  # the initial one and two ticks
    [later] = computer.desktop()
    assert int(re.search(r"tick (\d+)", later).group(1)) >= tick + 2
    assert announced.count(events.UPDATE_FINDER) == 0


def test_without_a_fullscreen_window_every_window_shows_by_priority(live_desktop: Any) -> None:
    computer, _ = live_desktop("--fullscreen", "none", "--interval", "0.2")
    assert uris(computer.desktop()) == [
        "window://com.example.desktop/browser?priority=80",
        "window://com.example.desktop/editor?priority=60",
        "window://com.example.desktop/terminal?priority=40",
        "window://com.example.desktop/monitor?priority=20",
    ]
    assert computer.desktop(window="window://com.example.desktop/editor?priority=60")[0].endswith(
        "- [ ] Write the release notes"
    )


def test_two_servers_listing_one_window_host_are_warned_about_when_listed(
    computer_factory: Any, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """spec-0.3/desktop.md: hosts SHOULD be unique across MCP servers; a clash is warned
    at registration (before any desktop is asked for), once, and both are still shown."""
    shared = [window("com.example.shared", "a"), window("com.example.shared", "b")]
    caplog.set_level(logging.WARNING, logger="smcp_sync.computer.channels.window_layout")
    computer = computer_factory(
        resource_config("one", tmp_path / "one.json", shared[:1]),
        resource_config("two", tmp_path / "two.json", shared[1:]),
        resource_config("own", tmp_path / "own.json", [window("com.example.own", "c")]),
    )
    clashes = [r.getMessage() for r in caplog.records if "both list windows of host" in r.getMessage()]
    assert clashes == ["desktop: MCP servers 'one' and 'two' both list windows of host 'com.example.shared' "
                       "(hosts should be unique across servers); each server's windows are still shown as its own"]
    assert sorted(uris(computer.desktop())) == ["window://com.example.own/c", "window://com.example.shared/a",
                                                "window://com.example.shared/b"]  # fmt: skip
    computer.call_tool("one__set_resources", {"resources": shared[:1]}, timeout=10)  # listed again: no new warning
    assert len([r for r in caplog.records if "both list windows of host" in r.getMessage()]) == 1
