"""The official SDK a2c-smcp 0.4.2 on its own, over loopback: pins the wire facts of
`tests/interop/WIRE_NOTES_0.4.2.md` that the interop tests against smcp_sync rely on.

Its sync Server (version gate on), its Computer (mcp 1.x echo server) and its sync Agent
run as child processes in the 0.4.2 virtualenv (`tests/interop`).
"""

from __future__ import annotations

import pytest

from interop.harness import agent_results, by_op, echo_mcp_config, run_official_agent, start_official_computer, start_official_server
from interop.venv import CURRENT, LEGACY, official_sdk_python

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def python():
    return official_sdk_python(CURRENT)


def test_the_0_4_2_stack(python, no_leaks, spawn):
    server = spawn(start_official_server(python))
    assert (server.snapshot()[0]["sdk"], server.snapshot()[0]["version_gate"]) == ("0.4.2", True)
    computer = spawn(start_official_computer(python, server.url, "o-42", "c-42", echo_mcp_config(python), auth_via="sdk"))
    results = agent_results(
        run_official_agent(
            python,
            server.url,
            "o-42",
            "a-42",
            [
                {"op": "list_room"},
                {"op": "tool_call", "computer": "c-42", "tool": "echo", "params": {"text": "bare"}},
                {"op": "tool_call", "computer": "c-42", "tool": "echo__slow", "params": {"seconds": 5}, "timeout": 1},
                {"op": "get_resources", "computer": "c-42", "mcp_server": "nope"},
                {"op": "call", "event": "client:get_tools", "data": {"agent": "a-42", "req_id": "x", "computer": "ghost"}},
                {"op": "call", "event": "client:get_finder", "data": {"agent": "a-42", "req_id": "y", "computer": "c-42"}},
            ],
            auth_via="sdk",
        )
    )
    # Key in auth.token, version in the query, both seen by its Server and listed.
    assert {(a["ok"], tuple(a["auth_keys"]), a["a2c_version"]) for a in server.find_all("auth")} == {(True, ("token",), "0.4.0")}
    assert {s["a2c_version"] for s in by_op(results, "list_room")[0]["result"]["sessions"]} == {"0.4.0"}

    bare, timed_out = by_op(results, "tool_call")
    assert bare["raw"]["structuredContent"]["error"] == "Tool 'echo' not found in ExposedToolMapping"
    # Its Agent waits exactly the timeout: an error of its own making, and no cancel sent.
    assert timed_out["raw"] is None and timed_out["result"]["isError"] is True
    computer.wait_for({"event": "reply", "name": "client:tool_call", "data": {"meta": {"a2c_timeout": True}}}, 20)

    resources = by_op(results, "get_resources")[0]
    assert resources["ok"] is False and resources["error"] == "[4014] MCP Server not registered"
    computer.wait_for({"event": "reply", "name": "client:get_resources", "data": {"code": 4014, "mcp_server": "nope"}}, 10)
    ghost, finder = by_op(results, "call")
    assert ghost["result"] == {"code": 404, "message": "Computer with name 'ghost' not found", "details": {"computer_name": "ghost"}}
    assert finder["result"] is None  # no handler: an empty ack at once


def test_its_version_gate_refuses_0_1_x_clients(python, no_leaks, spawn):
    server = spawn(start_official_server(python))
    events = run_official_agent(official_sdk_python(LEGACY), server.url, "o-old", "a-old", [], auth_via="auth")
    failed = [e for e in events if e["event"] in ("connect_failed", "connected")]
    assert [e["event"] for e in failed] == ["connect_failed"]
    assert "400" in failed[0]["error"]
    assert server.find_all("auth") == []  # refused before Socket.IO
