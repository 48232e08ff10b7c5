"""Desktop layout metadata end to end (spec-0.3/desktop.md "Window 资源元数据"): Server,
Computer and Agent with the test resource server listing windows that declare
`annotations.priority` / `_meta.fullscreen`, next to one listing the older query form
(``?priority=0-100&fullscreen=``) that real window servers use. The query's priority
counts as P / 100; declared metadata wins over the query; the older form is warned about
once per server, not per request; a metadata change alone is announced."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from smcp_sync.protocol import events

from .helpers import Notifications, office, resource_config

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

UPDATE = events.UPDATE_DESKTOP_NOTIFICATION
NEW = "window://com.example.new"
OLD = "window://com.example.old"


def window(uri: str, priority: float | None = None, fullscreen: object = None, **extra: object) -> dict:
    entry: dict = {"uri": uri, "name": uri.rsplit("/", 1)[-1], "text": f"{uri} body", **extra}
    if priority is not None:
        entry["annotations"] = {"priority": priority, "audience": ["assistant"]}
    if fullscreen is not None:
        entry["_meta"] = {"fullscreen": fullscreen}
    return entry


def shown(desktop: list[str]) -> list[str]:
    return [rendered.split("\n\n", 1)[0] for rendered in desktop]


def test_annotations_meta_and_the_older_query_form(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    new = [
        window(f"{NEW}/low", 0.1),
        window(f"{NEW}/undeclared"),  # no annotations: priority 0
        window(f"{NEW}/high", 0.9),
        # declared metadata wins over the query
        window(f"{NEW}/declared?priority=100", 0.5),
    ]
    old = [
        window(f"{OLD}/sixty?priority=60"),  # 0.6
        window(f"{OLD}/seventy", 0.7),  # mixed forms compare on one scale
        window(f"{OLD}/fifty?priority=50"),  # 0.5
    ]
    servers = [resource_config("new", tmp_path / "new.json", new), resource_config("old", tmp_path / "old.json", old)]
    caplog.set_level(logging.WARNING, logger="smcp_sync.computer.channels.window_layout")
    with office(servers) as (_, agent):
        desktop = agent.get_desktop("c1", timeout=10)
        assert shown(desktop) == [
            f"{NEW}/high", f"{NEW}/declared?priority=100", f"{NEW}/low", f"{NEW}/undeclared",
            f"{OLD}/seventy", f"{OLD}/sixty?priority=60", f"{OLD}/fifty?priority=50",
        ]  # fmt: skip
        assert desktop[0] == f"{NEW}/high\n\n{NEW}/high body"
        agent.get_desktop("c1", timeout=10)

        # fullscreen from _meta: the first one of its server alone; _meta false beats the query
        notes = Notifications(agent, UPDATE)
        changed = [
            window(f"{OLD}/query-fullscreen?fullscreen=true&priority=10", fullscreen=False),
            window(f"{OLD}/meta-fullscreen", 0.2, fullscreen=True),
            window(f"{OLD}/second-fullscreen", 0.9, fullscreen=True),
        ]
        agent.call_tool("c1", "old__set_resources", {"resources": changed}, timeout=10)
        notes.wait_for(UPDATE)
        on_old = [uri for uri in shown(agent.get_desktop("c1", timeout=10)) if uri.startswith(OLD)]
        assert on_old == [f"{OLD}/meta-fullscreen"]

        # the same URIs with other metadata: announced, and laid out anew
        notes.forget()
        reordered = [window(f"{NEW}/low", 0.95), *new[1:]]
        agent.call_tool("c1", "new__set_resources", {"resources": reordered}, timeout=10)
        notes.wait_for(UPDATE)
        assert shown(agent.get_desktop("c1", timeout=10))[:2] == [f"{NEW}/low", f"{NEW}/high"]  # called last: first

    older_form = [r.getMessage().split("'")[1] for r in caplog.records if "older form" in r.getMessage()]
    assert sorted(older_form) == ["new", "old"]  # once per server, whatever the requests and listings
