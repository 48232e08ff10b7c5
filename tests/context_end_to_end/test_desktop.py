"""The Desktop end to end (spec/desktop.md): Server, Computer and Agent with two example
window servers ("apps" without a fullscreen window, "panel" with its monitor fullscreen)
and the test resource server ("scratch") whose windows the test changes through its tools.
The organise rules, `desktop_size`, the directed fetch of one window, and update
notifications with the Agent's `prefetch_desktop` cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BadRequestError

from .helpers import Notifications, office, resource_config, windows_config

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

UPDATE = events.UPDATE_DESKTOP_NOTIFICATION
APPS = [
    f"window://com.example.apps/{name}?priority={priority}"
    for name, priority in (("browser", 80), ("editor", 60), ("terminal", 40), ("monitor", 20))
]
PANEL = "window://com.example.panel/monitor?priority=20&fullscreen=true"
LOW, HIGH, BLANK = (f"window://com.example.scratch/{w}" for w in ("low?priority=10", "high?priority=90", "blank"))
SCRATCH = [
    {"uri": LOW, "name": "low", "text": "low body"},
    {"uri": "window://com.example.scratch/bad?priority=500", "name": "bad", "text": "never shown: invalid priority"},
    {"uri": HIGH, "name": "high", "text": "high body"},
    {"uri": BLANK, "name": "blank", "text": ""},
]


def shown(desktop: list[str]) -> list[str]:
    """The window URI each rendered window starts with."""
    return [window.split("\n\n", 1)[0] for window in desktop]


def test_the_organise_rules_directed_fetch_and_updates(tmp_path: Path) -> None:
    servers = [
        windows_config("apps", "--host-id", "com.example.apps", "--fullscreen", "none", "--interval", "60"),
        windows_config("panel", "--host-id", "com.example.panel", "--interval", "60"),
        resource_config("scratch", tmp_path / "scratch.json", SCRATCH),
    ]
    with office(servers, prefetch_desktop=True) as (_, agent):
        notes = Notifications(agent, UPDATE)
        assert agent.desktop_cache.wait_for("c1", timeout=10)
        notes.settle(UPDATE)
        notes.forget()

        # servers by name (no tool call yet); windows by priority; the panel's fullscreen
        # window alone; the invalid window left out; an empty window as its bare URI
        desktop = agent.get_desktop("c1", timeout=10)
        assert shown(desktop) == [*APPS, PANEL, HIGH, LOW, BLANK]
        assert desktop[0].startswith(f"{APPS[0]}\n\nQuickstart — smcp_sync documentation\n")
        assert desktop[4].startswith(f"{PANEL}\n\nSystem monitor — tick 0\n")
        assert desktop[5:] == [f"{HIGH}\n\nhigh body", f"{LOW}\n\nlow body", BLANK]

        # desktop_size cuts across servers; 0 is an empty desktop
        assert shown(agent.get_desktop("c1", desktop_size=3, timeout=10)) == APPS[:3]
        assert agent.get_desktop("c1", desktop_size=0, timeout=10) == []
        assert agent.get_desktop("c1", desktop_size=100, timeout=10) == desktop

        # directed fetch: the exact listed URI, nothing for an unlisted one, 400 for an invalid one
        assert agent.get_desktop("c1", window=APPS[1], timeout=10) == [desktop[1]]
        assert agent.get_desktop("c1", window="window://com.example.apps/editor", timeout=10) == []
        with pytest.raises(BadRequestError) as invalid:
            agent.get_desktop("c1", window="window://com.example.apps/editor?priority=101", timeout=10)
        assert "rule 3: priority" in invalid.value.message
        assert agent.read_resource("c1", APPS[1], timeout=10).startswith("notes/todo.md — line 3")

        # a tool call on "scratch" puts it first; its resources/updated is one notification,
        # and the cache then gets the new content
        touched = agent.call_tool("c1", "touch", {"uri": HIGH, "text": "high body, touched"}, timeout=10)
        assert "updated sent to 1" in touched.text
        assert notes.settle(UPDATE) == 1
        cached = notes.cached("desktop", lambda desktop: desktop[0] == f"{HIGH}\n\nhigh body, touched")
        assert cached == tuple(agent.get_desktop("c1", timeout=10))
        assert shown(cached) == [HIGH, LOW, BLANK, *APPS, PANEL]

        # new windows (a list change): notified; of two fullscreen windows the first listed wins
        first = "window://com.example.scratch/first?fullscreen=true&priority=5"
        second = "window://com.example.scratch/second?priority=99&fullscreen=1"
        windows = [{"uri": LOW, "name": "low", "text": "low"}, {"uri": first, "name": "first", "text": "1st"}]
        windows.append({"uri": second, "name": "second", "text": "2nd"})
        agent.call_tool("c1", "set_resources", {"resources": windows}, timeout=10)
        assert notes.settle(UPDATE) == 2
        assert shown(agent.get_desktop("c1", timeout=10)) == [first, *APPS, PANEL]
        assert shown(agent.desktop_cache.get("c1")) == [first, *APPS, PANEL]


def test_a_live_window_keeps_the_agents_desktop_current(tmp_path: Path) -> None:
    with office([windows_config("desk", "--interval", "0.3")], prefetch_desktop=True) as (_, agent):
        notes = Notifications(agent, UPDATE)
        notes.wait_for(UPDATE, count=3)
        [window] = agent.desktop_cache.get("c1")
        tick = int(re.search(r"System monitor — tick (\d+)\n", window).group(1))
        assert tick >= 2 and window.startswith("window://com.example.desktop/monitor?priority=20&fullscreen=true\n\n")
        [latest] = agent.get_desktop("c1", timeout=10)
        assert int(re.search(r"tick (\d+)", latest).group(1)) >= tick
