"""Wire interop: our Computer on each official SDK version's Server (a2c-smcp 0.4.2 with its
version middleware on, and 0.1.6), used by that version's sync Agent — get_tools,
tool_call, cancel, get_desktop, get_config, get_resources, update notifications.

Their Server and Agent run as child processes in that version's virtualenv (one Server per
module and version, `tests/interop`). Our Computer presents the key where their Server reads
it by default (`OfficialPeer.server_auth`) and also hosts an mcp 1.x (FastMCP) stdio server
from that venv next to the mcp 2.x test server. Tools are exposed under BundleID names
(``{bundle_id}__{alias or tool}``): 0.4.2's Server drops a tool list without ``bundle_id``.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from interop.harness import (
    OfficialPeer,
    agent_results,
    by_op,
    echo_mcp_config,
    run_official_agent,
    start_official_server,
)

from smcp_sync.computer import Computer, allow_all

from .helpers import FAST, CallLogs, stdio_config

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

KEY = "test-key"
OFFICE = "o-ours"


@pytest.fixture(scope="module")
def their_server(official_peer: OfficialPeer):
    with start_official_server(official_peer.python, api_key=KEY, trace=False) as server:
        yield server


@pytest.fixture
def computer(official_peer: OfficialPeer, their_server, call_logs: CallLogs, no_leaks) -> Iterator[Computer]:
    legacy = echo_mcp_config(official_peer.python, name="legacy", auto_apply=False)
    legacy["tool_meta"] = {name: {"alias": f"legacy_{name}"} for name in ("echo", "add", "fail")}
    computer = Computer("c-ours", [stdio_config("tools", env=call_logs.env), legacy], policy=FAST, confirm=allow_all).start()
    try:
        computer.connect(their_server.url, OFFICE, auth=official_peer.server_auth(KEY))
        yield computer
    finally:
        computer.close()


def _run(peer: OfficialPeer, url: str, name: str, steps: list[dict]) -> list[dict]:
    results = agent_results(run_official_agent(peer.python, url, OFFICE, name, steps, auth_via=peer.auth_via_own_server))
    assert all(r["ok"] for r in results), results
    return results


def _meta(raw: dict[str, Any]) -> dict[str, Any]:
    return raw.get("meta") or raw.get("_meta") or {}


def test_their_agent_calls_our_tools_and_cancels(official_peer: OfficialPeer, their_server, computer: Computer) -> None:
    assert computer.servers.status("legacy").running, "the mcp 1.x server must start"
    results = _run(
        official_peer,
        their_server.url,
        "a-calls",
        [
            {"op": "get_tools", "computer": "c-ours"},
            {"op": "tool_call", "computer": "c-ours", "tool": "tools__echo", "params": {"text": "hi"}},
            {"op": "tool_call", "computer": "c-ours", "tool": "legacy__legacy_add", "params": {"a": 2, "b": 3}},
            {"op": "tool_call", "computer": "c-ours", "tool": "tools__fail", "params": {"message": "boom"}},
            {"op": "tool_call", "computer": "c-ours", "tool": "nope", "params": {}},
            {"op": "tool_call", "computer": "c-ours", "tool": "tools__sleep", "params": {"seconds": 5.25}, "timeout": 1},
            {"op": "spawn", "label": "long", "steps": [
                {"op": "tool_call", "computer": "c-ours", "tool": "tools__sleep", "params": {"seconds": 70.25}, "timeout": 30},
            ]},
            {"op": "sleep", "seconds": 1.5},
            {"op": "cancel"},
            {"op": "join_spawned", "timeout": 20},
        ],
    )
    tools = {t["name"]: t for t in by_op(results, "get_tools")[0]["result"]["tools"]}
    assert {"tools__echo", "tools__sleep", "legacy__legacy_echo", "legacy__legacy_add", "legacy__slow"} <= set(tools)
    if official_peer.handshake:  # 0.1.6's Server strips keys its model lacks
        assert tools["tools__echo"]["bundle_id"] == "tools"

    main = sorted((c for c in by_op(results, "tool_call") if isinstance(c["index"], int)), key=lambda c: c["index"])
    echo, add, fail, unknown, timed_out = (call["raw"] for call in main)
    assert echo["content"][0]["text"] == "hi" and echo["isError"] is False
    assert add["content"][0]["text"] == "5"  # served by the mcp 1.x server under its alias
    assert fail["isError"] is True and fail["content"][0]["text"] == "boom"
    assert unknown["isError"] is True
    # Their Agent waits exactly the request's timeout, as long as our Computer: its own wait
    # ends first, with an error result of its making (docs/wire/compatibility.md, *Interop matrix*, note 9).
    assert timed_out is None and main[-1]["result"]["isError"] is True
    cancelled = next(c for c in by_op(results, "tool_call") if c["index"] == "long.0")["raw"]
    assert cancelled["isError"] is True and _meta(cancelled)["a2c_cancelled"] is True


def test_their_agent_reads_desktop_config_and_resources(official_peer: OfficialPeer, their_server, computer: Computer) -> None:
    steps = [{"op": "get_desktop", "computer": "c-ours"}, {"op": "get_desktop", "computer": "c-ours", "size": 1}]
    if official_peer.handshake:  # 0.1.6's Server routes neither
        steps += [
            {"op": "get_config", "computer": "c-ours"},
            {"op": "get_resources", "computer": "c-ours", "mcp_server": "legacy"},
        ]
    results = _run(official_peer, their_server.url, "a-reads", steps)
    full, sized = (r["result"]["desktops"] for r in by_op(results, "get_desktop"))
    assert full[0] == "window://echo.test/main?priority=50\n\nhello from the echo main window"
    assert sized == full[:1]
    if official_peer.handshake:
        assert set(by_op(results, "get_config")[0]["result"]["servers"]) == {"tools", "legacy"}
        resources = by_op(results, "get_resources")[0]["result"]["resources"]
        assert {(r["uri"], r["mime_type"]) for r in resources} >= {("note://echo.test/readme", "text/plain")}


def test_their_agent_hears_our_tool_list_change(official_peer: OfficialPeer, their_server, computer: Computer) -> None:
    results = _run(
        official_peer,
        their_server.url,
        "a-hears",
        [
            {"op": "tool_call", "computer": "c-ours", "tool": "tools__add_tool", "params": {"name": "fresh"}},
            {"op": "wait_notify", "name": "notify:update_tool_list", "match": {"computer": "c-ours"}, "timeout": 20},
            {"op": "get_tools", "computer": "c-ours"},
        ],
    )
    assert by_op(results, "tool_call")[0]["raw"]["content"][0]["text"] == "added fresh"
    assert "tools__fresh" in {t["name"] for t in by_op(results, "get_tools")[0]["result"]["tools"]}
