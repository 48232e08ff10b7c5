"""Wire interop: our Agent against the official A2C-SMCP SDK's Server with its Computer.

The official Server (sync, werkzeug) and Computer (with the mcp 1.x echo server) run as
child processes in the SDK's own virtualenv (harness in `tests/interop`). Facts about
their behaviour that these tests rely on are in `tests/interop/WIRE_NOTES.md`: the key
goes in the auth dict as ``access_token``; the Server never answers with an error object
(refusals are silence, so every call here has a short timeout); `client:get_config` is
not routed (empty answer); tool-call errors carry no `error_code`.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from smcp_sync.agent import Agent
from smcp_sync.connection import ReconnectPolicy
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ForbiddenError, NotFoundError
from smcp_sync.protocol.models import EnterOfficeNotification, LeaveOfficeNotification

from interop.harness import echo_mcp_config, start_official_computer, start_official_server
from office_parts import joined_agent

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"  # the harness scripts' default key
OFFICE = "o-agent-interop"
NO_RECONNECT = ReconnectPolicy(enabled=False)


@pytest.fixture(scope="module")
def official_office(official_python):
    """The official Server with one official Computer `c-off` in OFFICE (shared by the
    tests of this module: each starts its own Agent)."""
    with (
        start_official_server(official_python, api_key=KEY, trace=False) as server,
        start_official_computer(
            official_python, server.url, OFFICE, "c-off", echo_mcp_config(official_python, host_id="echo.test")
        ) as computer,
    ):
        yield official_python, server, computer


@pytest.fixture
def agent(official_office, no_leaks):
    _, server, _ = official_office
    with contextlib.ExitStack() as stack:
        yield _join_once_the_office_is_free(stack, server.url)


def _join_once_the_office_is_free(stack: contextlib.ExitStack, url: str) -> Agent:
    """Our Agent "a-ours" in OFFICE. The official Server forgets the previous test's Agent
    a moment after it disconnected; until then it refuses a new one with "Agent already in
    room" (WIRE_NOTES.md), so joining is retried for a few seconds."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return stack.enter_context(
                joined_agent("a-ours", url, OFFICE, timeout=10, auth={"access_token": KEY}, reconnect=NO_RECONNECT)
            )
        except ForbiddenError as exc:
            if "Agent already in room" not in exc.message or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_join_caches_tools_and_tool_calls_work(agent):
    cached = agent.tool_cache.wait_for("c-off", timeout=20)
    assert cached is not None, "the tools of the official Computer were never cached"
    tools = agent.get_tools("c-off", timeout=20)
    names = {tool.name for tool in tools}
    assert {"echo", "add", "slow", "fail"} <= names
    assert {tool.name for tool in cached} == names
    echo = next(tool for tool in tools if tool.name == "echo")
    assert echo.description == "Echo the text back." and echo.params_schema["properties"]["text"]["type"] == "string"

    result = agent.call_tool("c-off", "echo", {"text": "hi from smcp_sync"}, timeout=20)
    assert not result.is_error and result.text == "hi from smcp_sync"
    assert agent.call_tool("c-off", "add", {"a": 2, "b": 3}, timeout=20).text == "5"

    failed = agent.call_tool("c-off", "fail", {"message": "boom"}, timeout=20)
    assert failed.is_error and "boom" in failed.text

    unknown = agent.call_tool("c-off", "nope", {}, timeout=20)
    assert unknown.is_error and unknown.structured_content["error_type"] == "ValueError"

    timed_out = agent.call_tool("c-off", "slow", {"seconds": 5}, timeout=1)  # the Computer's own timeout
    assert timed_out.is_error and "timed out" in timed_out.text


def test_desktop_and_list_room(agent):
    desktops = agent.get_desktop("c-off", timeout=20)
    assert desktops[0] == "window://echo.test/main?priority=50\n\nhello from the echo main window"
    assert desktops[1].startswith("window://echo.test/aux?priority=10")
    assert agent.get_desktop("c-off", desktop_size=1, timeout=20) == desktops[:1]

    sessions = agent.list_room(timeout=20)
    assert {(s.name, s.role, s.office_id) for s in sessions} == {("a-ours", "agent", OFFICE), ("c-off", "computer", OFFICE)}


def test_get_config_is_not_routed_by_the_official_server(agent):
    with pytest.raises(NotFoundError, match="empty answer to client:get_config"):
        agent.get_config("c-off", timeout=20)


def test_enter_and_leave_notifications_from_the_official_server(official_office, agent):
    python, server, _ = official_office
    seen: list[tuple[str, object, tuple | None]] = []
    changed = threading.Condition()

    def record(event: str):
        def callback(notification) -> None:
            with changed:
                seen.append((event, notification, agent.tool_cache.get("c-late")))
                changed.notify_all()

        return callback

    agent.on(events.ENTER_OFFICE_NOTIFICATION, record("enter"))
    agent.on(events.LEAVE_OFFICE_NOTIFICATION, record("leave"))
    late = start_official_computer(python, server.url, OFFICE, "c-late", echo_mcp_config(python, host_id="late.test"))
    try:
        with changed:
            assert changed.wait_for(lambda: len(seen) >= 1, 30), "no notify:enter_office"
        event, notification, cached = seen[0]
        assert (event, notification) == ("enter", EnterOfficeNotification(office_id=OFFICE, computer="c-late"))
        assert cached and "echo" in {tool.name for tool in cached}
    finally:
        late.stop()
    with changed:
        assert changed.wait_for(lambda: len(seen) >= 2, 30), "no notify:leave_office"
    event, notification, cached = seen[1]
    assert (event, notification, cached) == ("leave", LeaveOfficeNotification(office_id=OFFICE, computer="c-late"), None)
    assert "c-late" not in agent.tool_cache
