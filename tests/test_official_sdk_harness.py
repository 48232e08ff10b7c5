"""The official A2C-SMCP Python SDK (a2c-smcp 0.1.6) on its own, over loopback.

Its sync Server, its Computer (with a mcp 1.x stdio echo server) and its sync Agent run as
child processes in the SDK's own virtualenv (``tests/interop``). These tests prove the
harness works and pin the SDK's wire behaviour that ``tests/interop/WIRE_NOTES.md``
describes; the interop tests against smcp_sync build on the same helpers.
"""

from __future__ import annotations

import json
import time

import pytest

from interop.harness import (
    agent_results,
    by_op,
    echo_mcp_config,
    run_official_agent,
    start_official_agent,
    start_official_computer,
)
from interop.venv import LEGACY, official_sdk_python

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

TOOL_KEYS = {"name", "description", "params_schema", "return_schema", "meta"}
CALL_TOOL_RESULT_KEYS = {"meta", "content", "structuredContent", "isError"}


def test_venv_is_cached(official_python):
    started = time.monotonic()
    assert official_sdk_python(LEGACY) == official_python
    assert time.monotonic() - started < 30
    assert official_python.exists()


def test_official_stack_round_trip(official_python, official_server, spawn):
    computer = spawn(start_official_computer(official_python, official_server.url, "o-rt", "c-rt", echo_mcp_config(official_python)))
    events = run_official_agent(
        official_python,
        official_server.url,
        "o-rt",
        "a-rt",
        [
            {"op": "list_room"},
            {"op": "get_computers"},
            {"op": "get_tools", "computer": "c-rt"},
            {"op": "tool_call", "computer": "c-rt", "tool": "echo", "params": {"text": "hi"}},
            {"op": "tool_call", "computer": "c-rt", "tool": "add", "params": {"a": 2, "b": 3}},
            {"op": "get_desktop", "computer": "c-rt"},
            {"op": "get_desktop", "computer": "c-rt", "size": 1},
            {"op": "get_desktop", "computer": "c-rt", "window": "window://echo.test/aux?priority=10"},
            {"op": "leave"},
        ],
    )
    results = agent_results(events)
    assert all(r["ok"] for r in results), results

    join = by_op(results, "join")[0]
    assert join["ack"] == [True, None]

    listing = by_op(results, "list_room")[0]["result"]
    assert listing["req_id"] == "list_computers_a-rt_o-rt"
    sessions = {(s["name"], s["role"], s["office_id"]) for s in listing["sessions"]}
    assert sessions == {("c-rt", "computer", "o-rt"), ("a-rt", "agent", "o-rt")}
    assert all(set(s) == {"sid", "name", "role", "office_id"} for s in listing["sessions"])
    assert [c["name"] for c in by_op(results, "get_computers")[0]["result"]] == ["c-rt"]

    tools = by_op(results, "get_tools")[0]["result"]["tools"]
    assert {t["name"] for t in tools} >= {"echo", "add", "slow", "fail", "set_window"}
    assert all(set(t) == TOOL_KEYS for t in tools)
    echo = next(t for t in tools if t["name"] == "echo")
    assert echo["params_schema"]["required"] == ["text"]
    assert isinstance(echo["meta"]["a2c_tool_meta"], str)  # complex meta values travel as JSON strings

    echo_call, add_call = by_op(results, "tool_call")
    assert set(echo_call["raw"]) == CALL_TOOL_RESULT_KEYS  # "meta", never "_meta", on the wire
    assert echo_call["raw"]["isError"] is False
    assert echo_call["raw"]["content"] == [{"type": "text", "text": "hi", "annotations": None, "meta": None}]
    assert echo_call["raw"]["structuredContent"] == {"result": "hi"}
    assert echo_call["raw"]["meta"] == {"a2c_tool_meta": {"auto_apply": True, "alias": None, "tags": None, "ret_object_mapper": None}}
    assert add_call["raw"]["structuredContent"] == {"result": 5}

    full, sized, single = (r["result"] for r in by_op(results, "get_desktop"))
    assert full["desktops"] == [
        "window://echo.test/main?priority=50\n\nhello from the echo main window",
        "window://echo.test/aux?priority=10\n\nthe aux window",
    ]
    assert sized["desktops"] == full["desktops"][:1]
    assert single["desktops"] == ["window://echo.test/aux?priority=10\n\nthe aux window"]

    assert by_op(results, "leave")[0]["ack"] == [True, None]

    # The Computer saw the agent come and go, and answered each routed request.
    computer.wait_for({"event": "notify", "name": "notify:leave_office", "data": {"office_id": "o-rt", "agent": "a-rt"}}, 10)
    assert computer.find_all({"event": "notify", "name": "notify:enter_office", "data": {"office_id": "o-rt", "agent": "a-rt"}})
    received = [e["name"] for e in computer.find_all("recv")]
    assert received == ["client:get_tools", "client:tool_call", "client:tool_call", "client:get_desktop", "client:get_desktop", "client:get_desktop"]
    tool_call = computer.find_all({"event": "recv", "name": "client:tool_call"})[0]["data"]
    assert set(tool_call) == {"computer", "tool_name", "params", "agent", "req_id", "timeout"}

    # The Server routed by name to the Computer's sid, passing the request through unchanged.
    computer_sid = computer.find_all("connected")[0]["sid"]
    routed = official_server.find_all({"event": "call", "name": "client:tool_call"})[0]
    assert routed["to"] == computer_sid and routed["timeout"] is None
    assert routed["data"] == tool_call


def test_official_agent_reacts_to_notifications(official_python, official_server, spawn):
    agent = spawn(
        start_official_agent(
            official_python,
            official_server.url,
            "o-nt",
            "a-nt",
            [
                {"op": "wait_notify", "name": "notify:enter_office", "match": {"computer": "c-nt"}, "timeout": 60},
                {"op": "wait_notify", "name": "notify:update_config", "timeout": 30},
                {"op": "tool_call", "computer": "c-nt", "tool": "set_window", "params": {"text": "changed"}},
                {"op": "wait_notify", "name": "notify:update_desktop", "timeout": 10},
                {"op": "tool_call", "computer": "c-nt", "tool": "tools_changed", "params": {}},
                {"op": "wait_notify", "name": "notify:update_tool_list", "timeout": 10},
                {"op": "wait_notify", "name": "notify:leave_office", "match": {"computer": "c-nt"}, "timeout": 30},
                {"op": "wait_notify", "name": "notify:enter_office", "match": {"computer": "c-nt"}, "timeout": 30},
                {"op": "wait_notify", "name": "notify:leave_office", "match": {"computer": "c-nt"}, "timeout": 30},
            ],
        )
    )
    agent.wait_for({"event": "result", "op": "join", "ok": True}, 30)
    computer = spawn(start_official_computer(official_python, official_server.url, "o-nt", "c-nt", echo_mcp_config(official_python)))

    # notify:enter_office -> the SDK agent fetches the tools by itself.
    mark = agent.wait_for_index({"event": "notify", "name": "notify:enter_office"}, 30)
    agent.wait_for({"event": "send", "name": "client:get_tools", "data": {"computer": "c-nt", "agent": "a-nt"}}, 10, after=mark)
    agent.wait_for({"event": "sdk_callback", "name": "on_tools_received", "computer": "c-nt"}, 10, after=mark)

    # server:update_config from the Computer -> notify:update_config -> tools fetched again.
    mark = agent.mark()
    computer.send({"op": "update_config"})
    agent.wait_for({"event": "notify", "name": "notify:update_config", "data": {"computer": "c-nt"}}, 10, after=mark)
    agent.wait_for({"event": "sdk_callback", "name": "on_tools_received"}, 10, after=mark)

    # resources/updated of a window -> server:update_desktop -> notify:update_desktop -> desktop fetched.
    mark = agent.wait_for_index({"event": "notify", "name": "notify:update_desktop", "data": {"computer": "c-nt"}}, 30)
    agent.wait_for({"event": "ack", "name": "client:get_desktop", "data": {"desktops": ["window://echo.test/main?priority=50\n\nchanged", "window://echo.test/aux?priority=10\n\nthe aux window"]}}, 10, after=mark)
    assert computer.find_all({"event": "send", "name": "server:update_desktop", "data": {"computer": "c-nt"}, "ack": False})

    # tools/list_changed -> server:update_tool_list -> notify:update_tool_list (the sync agent has no handler).
    agent.wait_for({"event": "notify", "name": "notify:update_tool_list", "data": {"computer": "c-nt"}}, 30)
    assert computer.find_all({"event": "send", "name": "server:update_tool_list", "data": {"computer": "c-nt"}, "ack": False})

    # An explicit leave, a re-join, then a disconnect (counts as leave).
    agent.wait_for({"event": "result", "op": "wait_notify", "name": "notify:update_tool_list"}, 30)
    computer.send({"op": "leave"})
    computer.wait_for({"event": "send", "name": "server:leave_office", "data": {"office_id": "o-nt"}, "ack": False}, 10)
    agent.wait_for({"event": "sdk_callback", "name": "on_computer_leave_office", "data": {"office_id": "o-nt", "computer": "c-nt"}}, 10)
    computer.send({"op": "join", "office": "o-nt"})
    computer.wait_for({"event": "joined", "office": "o-nt"}, 10)
    agent.wait_for({"event": "result", "op": "wait_notify", "name": "notify:enter_office", "index": 8}, 30)
    computer.stop()
    agent.wait_for("exit", 60)
    assert agent.wait_exit(30) == 0
    results = agent_results(agent.snapshot())
    assert all(r["ok"] for r in results), results
    leaves = [r["data"] for r in results if r.get("name") == "notify:leave_office"]
    assert leaves == [{"office_id": "o-nt", "computer": "c-nt"}] * 2


def test_official_tool_call_errors_timeout_and_cancel(official_python, official_server, spawn):
    computer = spawn(start_official_computer(official_python, official_server.url, "o-tc", "c-tc", echo_mcp_config(official_python)))
    events = run_official_agent(
        official_python,
        official_server.url,
        "o-tc",
        "a-tc",
        [
            {"op": "tool_call", "computer": "c-tc", "tool": "nope", "params": {}},
            {"op": "tool_call", "computer": "c-tc", "tool": "fail", "params": {"message": "boom"}},
            {"op": "tool_call", "computer": "c-tc", "tool": "slow", "params": {"seconds": 4}, "timeout": 2},
            {"op": "spawn", "steps": [{"op": "tool_call", "computer": "c-tc", "tool": "slow", "params": {"seconds": 3}, "timeout": 20}]},
            {"op": "sleep", "seconds": 1},
            {"op": "cancel"},
            {"op": "join_spawned", "timeout": 30},
        ],
    )
    results = agent_results(events)
    unknown, failing, timed_out = by_op(results, "tool_call")[:3]

    # Unknown tool: the Computer answers an isError result with empty content.
    assert unknown["raw"] == {
        "meta": None,
        "content": [],
        "structuredContent": {"error": "Tool 'nope' not found in any active server", "error_type": "ValueError"},
        "isError": True,
    }
    # A tool that raises: FastMCP's own isError result passes through.
    assert failing["raw"]["isError"] is True
    assert failing["raw"]["content"][0]["text"] == "Error executing tool fail: boom"

    # Timeout: the agent's call times out at `timeout` (socketio's TimeoutError is not the
    # builtin one the SDK catches), so it reports "Tool call failed" and sends no cancel.
    assert timed_out["raw"] is None
    assert timed_out["result"]["isError"] is True
    assert timed_out["result"]["content"][0]["text"].startswith("工具调用失败 / Tool call failed")
    reply = computer.wait_for(
        lambda e: e.get("event") == "reply" and "timed out" in json.dumps(e["data"], ensure_ascii=False), 10
    )
    assert reply["data"] == {
        "meta": None,
        "content": [{"type": "text", "text": "调用异常: Tool 'slow' execution timed out", "annotations": None, "meta": None}],
        "structuredContent": None,
        "isError": True,
    }

    # Cancel: the Server broadcasts notify:tool_call_cancel {agent, req_id}; the Computer ignores it.
    cancel = by_op(results, "cancel")[0]
    sent_cancels = [e for e in events if e.get("event") == "send" and e.get("name") == "server:tool_call_cancel"]
    assert [e["data"] for e in sent_cancels] == [{"agent": "a-tc", "req_id": cancel["req_id"]}]  # only the explicit one
    computer.wait_for({"event": "notify", "name": "notify:tool_call_cancel", "data": {"agent": "a-tc", "req_id": cancel["req_id"]}}, 10)
    spawned = next(r for r in results if r["index"] == "spawn.0")
    assert spawned["raw"]["isError"] is False and spawned["raw"]["structuredContent"] == {"result": "slept 3.0"}


def test_official_server_rules(official_python, official_server, spawn):
    config = echo_mcp_config(official_python)
    spawn(start_official_computer(official_python, official_server.url, "o-r1", "c-r1", config))
    spawn(start_official_computer(official_python, official_server.url, "o-r2", "c-r2", config))

    # Computer names: unique per office AND namespace-wide (one global name -> sid map).
    same_office = spawn(start_official_computer(official_python, official_server.url, "o-r1", "c-r1", config, wait="join_failed"))
    assert "Computer with name 'c-r1' already exists in room 'o-r1'" in same_office.find_all("join_failed")[0]["error"]
    other_office = spawn(start_official_computer(official_python, official_server.url, "o-r3", "c-r1", config, wait="join_failed"))
    assert "Name 'c-r1' already registered by sid" in other_office.find_all("join_failed")[0]["error"]

    agent = spawn(
        start_official_agent(
            official_python,
            official_server.url,
            "o-r1",
            "a-r1",
            [
                {"op": "tool_call", "computer": "c-r2", "tool": "echo", "params": {"text": "cross"}},
                {"op": "get_tools", "computer": "c-r2", "timeout": 2},
                {"op": "get_tools", "computer": "nobody", "timeout": 2},
                {"op": "list_room", "office": "o-r2", "timeout": 2},
                {"op": "get_config", "computer": "c-r1", "timeout": 2},
                {"op": "join", "office": "o-r2"},
                {"op": "leave", "office": "o-never"},
                {"op": "sleep", "seconds": 30},
            ],
        )
    )
    agent.wait_for({"event": "result", "op": "leave"}, 60)
    # Four independent short-lived Agents, run side by side.
    others = [
        spawn(start_official_agent(official_python, official_server.url, office, name, [], **options))
        for office, name, options in (
            ("o-r1", "a-r1b", {}),
            ("o-r9", "c-r2", {}),
            ("o-r9", "a-hdr", {"auth_via": "header"}),
            ("o-r9", "a-bad", {"api_key": "wrong"}),
        )
    ]
    for other in others:
        other.wait_for(lambda e: e.get("event") in ("exit", "connect_failed"), 90)
    second, clash, header_only, wrong_key = (other.snapshot() for other in others)
    agent.stop(grace=0)

    results = agent_results(agent.snapshot())
    cross, tools_other, tools_nobody, list_other, get_config, join_other, leave_never = results[1:8]
    # tool_call is routed by name with no office check; get_tools/list_room refuse by raising -> no ack.
    assert cross["ok"] and cross["raw"]["structuredContent"] == {"result": "cross"}
    for refused in (tools_other, tools_nobody, list_other):
        assert refused["ok"] is False and refused["error_type"] == "socketio.exceptions.TimeoutError"
    errors = {(e["name"], e["error_type"]) for e in official_server.find_all("handler_error")}
    assert ("client:get_tools", "builtins.AssertionError") in errors
    assert ("client:get_tools", "builtins.ValueError") in errors
    assert ("server:list_room", "builtins.AssertionError") in errors
    # client:get_config has no handler in the official server: an empty ack, i.e. None.
    assert get_config["ok"] and get_config["result"] is None
    assert join_other["ack"] == [False, "Internal server error: Agent sid already in room"]
    assert leave_never["ack"] == [True, None]

    assert agent_results(second)[0]["ack"] == [False, "Internal server error: Agent already in room"]
    assert agent_results(clash)[0]["ack"][0] is False
    assert "Name 'c-r2' already registered" in agent_results(clash)[0]["ack"][1]

    # Auth: the key only works in the Socket.IO auth dict; WSGI servers drop the
    # "access_token" header (underscore), so the SDK's documented api_key= usage is refused.
    for refused_events in (header_only, wrong_key):
        assert [e["event"] for e in refused_events if e["event"] in ("connect_failed", "connected")] == ["connect_failed"]
    auths = official_server.find_all("auth")
    assert {a["user_agent"].split("/")[0] for a in auths if a["ok"]} == {"Python", "python-requests"}
    assert all(a["transport"] == "polling" and a["eio"] == "4" for a in auths)
    assert all(not a["header_present"] for a in auths)


@pytest.mark.parametrize("transport", ["polling", "websocket"])
def test_official_single_transport(official_python, official_server, spawn, transport):
    office, name = f"o-{transport}", f"c-{transport}"
    computer = spawn(
        start_official_computer(official_python, official_server.url, office, name, echo_mcp_config(official_python), transports=[transport])
    )
    assert computer.find_all("connected")[0]["transport"] == transport
    events = run_official_agent(
        official_python,
        official_server.url,
        office,
        f"a-{transport}",
        [{"op": "tool_call", "computer": name, "tool": "echo", "params": {"text": transport}}],
        transports=[transport],
    )
    assert [e["transport"] for e in events if e["event"] == "connected"] == [transport]
    call = by_op(agent_results(events), "tool_call")[0]
    assert call["raw"]["structuredContent"] == {"result": transport}


def test_official_computer_handlers_locally(official_python, official_server, spawn):
    computer = spawn(start_official_computer(official_python, official_server.url, "o-lc", "c-lc", echo_mcp_config(official_python)))
    invoke = [
        {"op": "invoke", "event": "client:get_config", "data": {"agent": "x", "req_id": "r1", "computer": "c-lc"}},
        {"op": "invoke", "event": "client:get_tools", "data": {"agent": "x", "req_id": "r2", "computer": "someone-else"}},
        {"op": "invoke", "event": "client:tool_call", "data": {"agent": "x", "req_id": "r3", "computer": "c-lc", "tool_name": "echo", "params": {}}},
        {"op": "invoke", "event": "client:get_desktop", "data": {"agent": "x", "req_id": "r4", "computer": "c-lc", "window": "window://echo.test/aux"}},
    ]
    mark = computer.mark()
    for command in invoke:
        computer.send(command)
    results = computer.wait_for_count({"event": "result", "op": "invoke"}, len(invoke), 30, after=mark)
    config, wrong_name, no_timeout, unknown_window = results

    # client:get_config: {"servers": {name: SDK config}, "inputs": [...]} -- no req_id.
    assert set(config["result"]) == {"servers", "inputs"}
    echo = config["result"]["servers"]["echo"]
    assert echo["type"] == "stdio" and echo["default_tool_meta"]["auto_apply"] is True
    assert set(echo["server_parameters"]) == {"command", "args", "env", "cwd", "encoding", "encoding_error_handler"}
    # Every client:* handler asserts data["computer"] == its own name: else it raises and never acks.
    assert wrong_name["ok"] is False and wrong_name["error_type"] == "builtins.AssertionError"
    # tool_call needs "timeout": without it the Computer answers an isError result naming the KeyError.
    assert no_timeout["result"]["structuredContent"] == {"error": "'timeout'", "error_type": "KeyError"}
    # A window filter must match the listed URI string exactly (query included).
    assert unknown_window["result"] == {"desktops": [], "req_id": "r4"}
