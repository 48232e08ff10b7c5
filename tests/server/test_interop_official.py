"""Wire interop: the official A2C-SMCP Python SDK (a2c-smcp 0.1.6) against our Server.

Its Computer (with the mcp 1.x stdio echo server) and its sync Agent run as child
processes in the SDK's own virtualenv, driven by the harness of `tests/interop`; the
Server is ours, started in-process. They connect with the key in the Socket.IO auth dict
as ``access_token`` and start on polling, then upgrade.
"""

from __future__ import annotations

import pytest
from interop.harness import (
    agent_results,
    by_op,
    echo_mcp_config,
    run_official_agent,
    start_official_agent,
    start_official_computer,
)

from .peers import wait_until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"  # the harness scripts' default key


@pytest.fixture
def our_server(official_python, server_factory):
    # official_python first: building the venv (once) must not count against no_leaks.
    return server_factory(auth=KEY)


def test_official_computer_and_agent_round_trip_through_our_server(official_python, our_server, spawn):
    computer = spawn(
        start_official_computer(official_python, our_server.url, "o-int", "c-int", echo_mcp_config(official_python))
    )
    events = run_official_agent(
        official_python,
        our_server.url,
        "o-int",
        "a-int",
        [
            {"op": "list_room"},
            {"op": "get_computers"},
            {"op": "get_tools", "computer": "c-int"},
            {"op": "tool_call", "computer": "c-int", "tool": "echo", "params": {"text": "hi"}},
            {"op": "tool_call", "computer": "c-int", "tool": "add", "params": {"a": 2, "b": 3}},
            {"op": "get_desktop", "computer": "c-int"},
            {"op": "get_desktop", "computer": "c-int", "size": 1},
            {"op": "get_config", "computer": "c-int"},
            {"op": "call", "event": "client:get_tools", "data": {"agent": "a-int", "req_id": "x", "computer": "ghost"}},
        ],
    )
    results = agent_results(events)
    assert all(r["ok"] for r in results), results
    assert by_op(results, "join")[0]["ack"] == [True, None]

    listing = by_op(results, "list_room")[0]["result"]
    assert listing["req_id"] == "list_computers_a-int_o-int"
    assert {(s["name"], s["role"], s["office_id"]) for s in listing["sessions"]} == {
        ("c-int", "computer", "o-int"),
        ("a-int", "agent", "o-int"),
    }
    assert [c["name"] for c in by_op(results, "get_computers")[0]["result"]] == ["c-int"]

    tools = by_op(results, "get_tools")[0]["result"]["tools"]
    assert {t["name"] for t in tools} >= {"echo", "add", "slow", "fail", "set_window"}

    echo_call, add_call = by_op(results, "tool_call")
    assert echo_call["result"]["isError"] is False
    assert echo_call["raw"]["content"][0]["text"] == "hi"
    assert add_call["raw"]["structuredContent"] == {"result": 5}

    full, sized = (r["result"]["desktops"] for r in by_op(results, "get_desktop"))
    assert full == [
        "window://echo.test/main?priority=50\n\nhello from the echo main window",
        "window://echo.test/aux?priority=10\n\nthe aux window",
    ]
    assert sized == full[:1]
    # Our Server routes client:get_config (0.1.6's does not); their Computer answers it.
    assert set(by_op(results, "get_config")[0]["result"]["servers"]) == {"echo"}

    # A refusal reaches the official Agent as the flat error payload, not as a timeout.
    assert by_op(results, "call")[0]["result"]["code"] == 404

    # Requests were forwarded unchanged, and the Agent's disconnect counted as its leave.
    tool_call = computer.find_all({"event": "recv", "name": "client:tool_call"})[0]["data"]
    assert set(tool_call) == {"computer", "tool_name", "params", "agent", "req_id", "timeout"}
    computer.wait_for({"event": "notify", "name": "notify:enter_office", "data": {"office_id": "o-int", "agent": "a-int"}}, 10)
    computer.wait_for({"event": "notify", "name": "notify:leave_office", "data": {"office_id": "o-int", "agent": "a-int"}}, 10)
    assert [m.name for m in our_server.registry.members("o-int")] == ["c-int"]


def test_official_agent_sees_the_official_computer_come_update_and_go(official_python, our_server, spawn):
    agent = spawn(
        start_official_agent(
            official_python,
            our_server.url,
            "o-life",
            "a-life",
            [
                {"op": "wait_notify", "name": "notify:enter_office", "match": {"computer": "c-life"}, "timeout": 60},
                {"op": "wait_notify", "name": "notify:update_config", "timeout": 30},
                {"op": "tool_call", "computer": "c-life", "tool": "set_window", "params": {"text": "changed"}},
                {"op": "wait_notify", "name": "notify:update_desktop", "timeout": 30},
                {"op": "wait_notify", "name": "notify:leave_office", "match": {"computer": "c-life"}, "timeout": 30},
            ],
        )
    )
    agent.wait_for({"event": "result", "op": "join", "ok": True}, 60)
    computer = spawn(
        start_official_computer(official_python, our_server.url, "o-life", "c-life", echo_mcp_config(official_python))
    )

    # Enter notification -> the SDK Agent fetches the Computer's tools by itself.
    mark = agent.wait_for_index({"event": "notify", "name": "notify:enter_office", "data": {"office_id": "o-life", "computer": "c-life"}}, 30)
    agent.wait_for({"event": "sdk_callback", "name": "on_tools_received", "computer": "c-life"}, 30, after=mark)

    # server:update_config from the Computer -> notify:update_config to the office.
    computer.send({"op": "update_config"})
    agent.wait_for({"event": "notify", "name": "notify:update_config", "data": {"computer": "c-life"}}, 30)

    # A window changes -> server:update_desktop -> notify:update_desktop -> the Agent re-reads it.
    mark = agent.wait_for_index({"event": "notify", "name": "notify:update_desktop", "data": {"computer": "c-life"}}, 30)
    agent.wait_for(
        {"event": "ack", "name": "client:get_desktop", "data": {"desktops": [
            "window://echo.test/main?priority=50\n\nchanged",
            "window://echo.test/aux?priority=10\n\nthe aux window",
        ]}},
        30,
        after=mark,
    )

    # The Computer disconnects without leaving: the Agent is told it left.
    computer.stop()
    agent.wait_for({"event": "result", "op": "wait_notify", "name": "notify:leave_office", "ok": True}, 30)
    agent.wait_for("exit", 60)
    wait_until(lambda: our_server.registry.members("o-life") == [], timeout=10)


def test_official_clients_with_a_wrong_key_are_refused(official_python, our_server, spawn):
    events = run_official_agent(official_python, our_server.url, "o-x", "a-x", [], api_key="wrong")
    assert [e["event"] for e in events if e["event"] in ("connect_failed", "connected")] == ["connect_failed"]
