"""What a listed window declares about its layout (`WindowLayouts`): values, the spec's
fallbacks for bad ones, and warnings once per server and kind (never per listing)."""

from __future__ import annotations

import logging

import pytest

from smcp_sync.computer.channels.window_layout import WindowLayout, WindowLayouts
from smcp_sync.protocol import from_wire
from smcp_sync.protocol.models import Resource

LOGGER = "smcp_sync.computer.channels.window_layout"


def listed(uri: str, **fields: object) -> Resource:
    return from_wire(Resource, {"uri": uri, "name": "w", **fields})


def test_declared_priority_and_fullscreen_are_read() -> None:
    resource = listed("window://h/a", annotations={"priority": 0.25, "audience": ["assistant"]}, _meta={"fullscreen": True})
    assert WindowLayouts()("s", resource) == WindowLayout(priority=0.25, fullscreen=True)
    assert WindowLayouts()("s", listed("window://h/a?priority=5")) == WindowLayout()  # the organiser reads the query


@pytest.mark.parametrize(
    "fields, layout, warning",
    [
        ({"annotations": {"priority": 1.5}}, WindowLayout(priority=0.0), "not in [0, 1]"),
        ({"_meta": {"fullscreen": "yes"}}, WindowLayout(fullscreen=False), "no bool"),
        ({"annotations": {"audience": ["user"]}}, WindowLayout(), "shown all the same"),
    ],
)
def test_bad_metadata_falls_back_as_the_spec_says_with_one_warning_per_server(
    fields: dict, layout: WindowLayout, warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    layouts = WindowLayouts()
    for _ in range(3):  # three listings of the same server
        assert layouts("s", listed("window://h/a", **fields)) == layout
    layouts("t", listed("window://h/b", **fields))
    assert [r.getMessage().split("'")[1] for r in caplog.records if warning in r.getMessage()] == ["s", "t"]
