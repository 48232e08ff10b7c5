"""Wire interop: our Computer joined to the official SDK's Server (a2c-smcp 0.1.6), used
by the official SDK's sync Agent — get_tools, tool_call, cancel, update notifications.

The official Server and Agent run as child processes in the SDK's own virtualenv (it pins
mcp<2), driven by the harness of `tests/interop`. Our Computer also hosts an mcp 1.x
(FastMCP) stdio server from that venv, next to the mcp 2.x test server: 1.x servers must
work too. The official clients send the key in the Socket.IO auth dict as `access_token`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer

from interop.harness import JsonLineProcess, agent_results, by_op, echo_mcp_config, run_official_agent

from .helpers import FAST, CallLogs, stdio_config

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

KEY = "test-key"  # the harness scripts' default key
OFFICE = "o-ours"


@pytest.fixture
def computer(official_python: Path, official_server: JsonLineProcess, call_logs: CallLogs) -> Iterator[Computer]:
    legacy = echo_mcp_config(official_python, name="legacy", auto_apply=False)
    legacy["tool_meta"] = {name: {"alias": f"legacy_{name}"} for name in ("echo", "add", "fail")}
    computer = Computer("c-ours", [stdio_config("tools", env=call_logs.env), legacy], policy=FAST).start()
    try:
        computer.connect(official_server.url, OFFICE, auth={"access_token": KEY})
        yield computer
    finally:
        computer.close()


def test_the_official_agent_uses_our_computer_through_the_official_server(
    official_python: Path, official_server: JsonLineProcess, computer: Computer
) -> None:
    assert computer.servers.status("legacy").running, "the mcp 1.x server must start"
    events = run_official_agent(
        official_python,
        official_server.url,
        OFFICE,
        "a-official",
        [
            {"op": "get_tools", "computer": "c-ours"},
            {"op": "tool_call", "computer": "c-ours", "tool": "echo", "params": {"text": "hi"}},
            {"op": "tool_call", "computer": "c-ours", "tool": "legacy_add", "params": {"a": 2, "b": 3}},
            {"op": "tool_call", "computer": "c-ours", "tool": "fail", "params": {"message": "boom"}},
            {"op": "tool_call", "computer": "c-ours", "tool": "nope", "params": {}},
            {"op": "spawn", "label": "long", "steps": [
                {"op": "tool_call", "computer": "c-ours", "tool": "sleep", "params": {"seconds": 70.5}, "timeout": 30},
            ]},
            {"op": "sleep", "seconds": 1.5},
            {"op": "cancel"},
            {"op": "join_spawned", "timeout": 20},
            {"op": "tool_call", "computer": "c-ours", "tool": "add_tool", "params": {"name": "fresh"}},
            {"op": "wait_notify", "name": "notify:update_tool_list", "match": {"computer": "c-ours"}, "timeout": 20},
            {"op": "get_tools", "computer": "c-ours"},
        ],
    )
    results = agent_results(events)
    assert all(r["ok"] for r in results), results

    first_tools, later_tools = (r["result"]["tools"] for r in by_op(results, "get_tools"))
    names = [t["name"] for t in first_tools]
    assert {"echo", "sleep", "legacy_echo", "legacy_add", "slow", "set_window"} <= set(names)
    legacy_meta = json.loads(next(t for t in first_tools if t["name"] == "legacy_echo")["meta"]["a2c_tool_meta"])
    assert legacy_meta["alias"] == "legacy_echo"
    assert "fresh" in [t["name"] for t in later_tools]

    calls = by_op(results, "tool_call")
    echo, add, fail, unknown, add_tool, cancelled = (call["raw"] for call in _ordered(calls))
    assert echo["content"][0]["text"] == "hi" and echo["isError"] is False
    assert add["content"][0]["text"] == "5"  # served by the mcp 1.x server under its alias
    assert fail["isError"] is True and fail["content"][0]["text"] == "boom"
    assert unknown["isError"] is True and _meta(unknown)["error_code"] == 4001
    assert add_tool["content"][0]["text"] == "added fresh"
    assert _meta(cancelled) == {"error_code": 4003, "a2c_cancelled": True}
    # the official SDK parses every answer into its own CallToolResult
    assert all(call["result"]["content"] for call in calls)


def _ordered(calls: list[dict]) -> list[dict]:
    """Main-thread calls in step order, then the spawned one."""
    main = sorted((c for c in calls if isinstance(c["index"], int)), key=lambda c: c["index"])
    return main + [c for c in calls if not isinstance(c["index"], int)]


def _meta(raw: dict[str, Any]) -> dict[str, Any]:
    return raw.get("meta") or raw.get("_meta") or {}
