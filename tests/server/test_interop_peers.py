"""Wire interop, each official SDK version (a2c-smcp 0.4.2 and 0.1.6) against our Server.

Their Computer (with the mcp 1.x echo server) and their sync Agent run as child processes
in that version's virtualenv (`tests/interop`) and present the key the way their SDK does
by default (`--auth-via sdk`: 0.4.2 in the Socket.IO auth dict as ``token``, 0.1.6 in the
HTTP header ``access_token``); 0.4.2 also sends its ``a2c_version`` query. Our Server runs
in-process; our Agent also calls their Computer through it. Wire facts:
`tests/interop/WIRE_NOTES.md` and `WIRE_NOTES_0.4.2.md`.
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
from office_parts import joined_agent

from smcp_sync.protocol.errors import NotFoundError

from .peers import wait_until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"  # the harness scripts' default key
DESKTOP = [
    "window://echo.test/main?priority=50\n\nhello from the echo main window",
    "window://echo.test/aux?priority=10\n\nthe aux window",
]


@pytest.fixture
def our_server(official_peer, server_factory):
    # official_peer first: building its venv (once) must not count against no_leaks.
    return server_factory(auth=KEY)


def test_their_computer_and_agent_with_their_default_auth_through_our_server(official_peer, our_server, spawn):
    peer = official_peer
    echo = peer.tool("echo", "echo")
    computer = spawn(
        start_official_computer(peer.python, our_server.url, "o-sdk", "c-sdk", echo_mcp_config(peer.python), auth_via="sdk")
    )
    steps = [
        {"op": "list_room"},
        {"op": "get_tools", "computer": "c-sdk"},
        {"op": "tool_call", "computer": "c-sdk", "tool": echo, "params": {"text": "hi"}},
        {"op": "get_desktop", "computer": "c-sdk"},
        {"op": "get_config", "computer": "c-sdk"},
        {"op": "call", "event": "client:get_tools", "data": {"agent": "a-sdk", "req_id": "x", "computer": "ghost"}},
    ]
    if peer.handshake:
        steps.append({"op": "get_resources", "computer": "c-sdk", "mcp_server": "echo"})
    results = agent_results(run_official_agent(peer.python, our_server.url, "o-sdk", "a-sdk", steps, auth_via="sdk"))
    assert all(r["ok"] for r in results), results
    assert by_op(results, "join")[0]["ack"] == [True, None]

    sessions = by_op(results, "list_room")[0]["result"]["sessions"]
    assert {(s["name"], s["role"], s["office_id"]) for s in sessions} == {
        ("c-sdk", "computer", "o-sdk"),
        ("a-sdk", "agent", "o-sdk"),
    }
    # Each session's protocol version, as its client announced it (none from 0.1.6).
    assert {s.get("a2c_version") for s in sessions} == ({"0.4.0"} if peer.handshake else {None})

    tools = {t["name"]: t for t in by_op(results, "get_tools")[0]["result"]["tools"]}
    assert {peer.tool("echo", name) for name in ("echo", "add", "slow", "fail")} <= set(tools)
    if peer.handshake:
        assert tools[echo]["bundle_id"] == "echo"
    assert by_op(results, "tool_call")[0]["raw"]["content"][0]["text"] == "hi"
    assert by_op(results, "get_desktop")[0]["result"]["desktops"] == DESKTOP
    assert set(by_op(results, "get_config")[0]["result"]["servers"]) == {"echo"}

    # A refusal reaches their Agent as the flat error payload, not as a timeout.
    assert by_op(results, "call")[0]["result"]["code"] == 404

    if peer.handshake:
        resources = by_op(results, "get_resources")[0]["result"]["resources"]
        assert {(r["uri"], r["mime_type"]) for r in resources} >= {("window://echo.test/main?priority=50", "text/plain")}

    computer.wait_for({"event": "notify", "name": "notify:leave_office", "data": {"office_id": "o-sdk", "agent": "a-sdk"}}, 10)
    assert [m.name for m in our_server.registry.members("o-sdk")] == ["c-sdk"]


def test_their_agent_sees_their_computer_come_update_and_go(official_peer, our_server, spawn):
    peer = official_peer
    agent = spawn(
        start_official_agent(
            peer.python,
            our_server.url,
            "o-life",
            "a-life",
            [
                {"op": "wait_notify", "name": "notify:enter_office", "match": {"computer": "c-life"}, "timeout": 60},
                {"op": "wait_notify", "name": "notify:update_tool_list", "timeout": 30},
                {"op": "wait_notify", "name": "notify:update_desktop", "timeout": 30},
                {"op": "wait_notify", "name": "notify:leave_office", "match": {"computer": "c-life"}, "timeout": 30},
            ],
            auth_via="sdk",
        )
    )
    agent.wait_for({"event": "result", "op": "join", "ok": True}, 60)
    computer = spawn(
        start_official_computer(peer.python, our_server.url, "o-life", "c-life", echo_mcp_config(peer.python), auth_via="sdk")
    )

    # Enter -> their Agent fetches the Computer's tools by itself.
    mark = agent.wait_for_index({"event": "notify", "name": "notify:enter_office", "data": {"office_id": "o-life", "computer": "c-life"}}, 30)
    agent.wait_for({"event": "sdk_callback", "name": "on_tools_received", "computer": "c-life"}, 30, after=mark)

    computer.send({"op": "update_tool_list"})
    agent.wait_for({"event": "notify", "name": "notify:update_tool_list", "data": {"computer": "c-life"}}, 30)

    # Their Agent re-reads the desktop after notify:update_desktop.
    computer.send({"op": "update_desktop"})
    mark = agent.wait_for_index({"event": "notify", "name": "notify:update_desktop", "data": {"computer": "c-life"}}, 30)
    agent.wait_for({"event": "ack", "name": "client:get_desktop", "data": {"desktops": DESKTOP}}, 30, after=mark)

    computer.stop()
    agent.wait_for({"event": "result", "op": "wait_notify", "name": "notify:leave_office", "ok": True}, 30)
    agent.wait_for("exit", 60)
    wait_until(lambda: our_server.registry.members("o-life") == [], timeout=10)


def test_their_clients_with_a_wrong_key_are_refused(official_peer, our_server):
    events = run_official_agent(official_peer.python, our_server.url, "o-x", "a-x", [], api_key="wrong", auth_via="sdk")
    assert [e["event"] for e in events if e["event"] in ("connect_failed", "connected")] == ["connect_failed"]


def test_our_agent_calls_their_computer_through_our_server(official_peer, our_server, spawn):
    peer = official_peer
    computer = spawn(
        start_official_computer(peer.python, our_server.url, "o-mix", "c-mix", echo_mcp_config(peer.python), auth_via="auth")
    )
    with joined_agent("a-mix", our_server.url, "o-mix", timeout=10, auth={"api_key": KEY}) as agent:
        assert peer.tool("echo", "echo") in {tool.name for tool in agent.get_tools("c-mix", timeout=20)}
        assert agent.call_tool("c-mix", peer.tool("echo", "echo"), {"text": "mixed"}, timeout=20).text == "mixed"
        timed_out = agent.call_tool("c-mix", peer.tool("echo", "slow"), {"seconds": 5}, timeout=1)
        assert timed_out.is_error and "timed out" in timed_out.text  # their Computer's own answer
        long_call = agent.submit_tool_call("c-mix", peer.tool("echo", "slow"), {"seconds": 30}, timeout=20 if peer.handshake else 3)
        computer.wait_for({"event": "recv", "name": "client:tool_call", "data": {"req_id": long_call.req_id}}, 20)
        agent.cancel_tool_call(long_call.req_id)
        assert long_call.result(timeout=30).is_error  # 0.4.2: cancelled; 0.1.6 ignores the notice: its timeout
        assert agent.get_desktop("c-mix", timeout=20) == DESKTOP
        assert set(agent.get_config("c-mix", timeout=20).servers) == {"echo"}
        if peer.handshake:
            page = agent.get_resources("c-mix", "echo", timeout=20)
            assert {r.uri: r.mime_type for r in page.resources}["note://echo.test/readme"] == "text/plain"
        # Our extensions: their Computer did not list them, so our Server refuses at once.
        with pytest.raises(NotFoundError) as refused:
            agent.get_finder("c-mix", timeout=60)
        assert (refused.value.details or {}).get("reason") == "extension_not_supported"
        with pytest.raises(NotFoundError) as refused:
            agent.read_resource("c-mix", "window://echo.test/main?priority=50", timeout=60)
        assert (refused.value.details or {}).get("reason") == "extension_not_supported"


def test_their_agent_announcing_another_version_gets_our_4008(official_peer, our_server):
    if not official_peer.handshake:
        pytest.skip("a2c-smcp 0.1.6 announces no version (our Server accepts it by default)")
    events = run_official_agent(
        official_peer.python, our_server.url, "o-v", "a-v", [], auth_via="sdk", claim_version="0.5.0"
    )
    failed = [e for e in events if e["event"] in ("connect_failed", "connected")]
    assert len(failed) == 1 and failed[0]["event"] == "connect_failed", events
    # Their SDK read our HTTP 400 body as the 4008 it knows.
    assert failed[0]["error_type"] == "a2c_smcp.exceptions.ProtocolVersionError"
    assert (failed[0]["client_version"], failed[0]["server_version"]) == ("0.5.0", "0.4.0")


def test_versionless_clients_are_refused_when_our_server_requires_a_version(official_peer, server_factory):
    strict = server_factory(auth=KEY, require_client_version=True)
    events = run_official_agent(official_peer.python, strict.url, "o-req", "a-req", [], auth_via="auth")
    connected = [e["event"] for e in events if e["event"] in ("connect_failed", "connected")]
    # 0.4.2 announces its version and gets in; 0.1.6 announces none and is refused at the HTTP layer.
    assert connected == (["connected"] if official_peer.handshake else ["connect_failed"])
    if not official_peer.handshake:
        assert "400" in next(e for e in events if e["event"] == "connect_failed")["error"]


def test_their_agent_cancels_and_times_out_calls_through_our_server(official_peer, our_server, spawn):
    peer = official_peer
    slow = peer.tool("echo", "slow")
    computer = spawn(
        start_official_computer(peer.python, our_server.url, "o-cx", "c-cx", echo_mcp_config(peer.python), auth_via="auth")
    )
    long_timeout = 20 if peer.handshake else 4  # 0.1.6's Computer ignores the cancel: keep its call short
    results = agent_results(
        run_official_agent(
            peer.python,
            our_server.url,
            "o-cx",
            "a-cx",
            [
                {"op": "spawn", "label": "long", "steps": [
                    {"op": "tool_call", "computer": "c-cx", "tool": slow, "params": {"seconds": 30}, "timeout": long_timeout},
                ]},
                {"op": "sleep", "seconds": 1.5},
                {"op": "cancel"},
                {"op": "join_spawned", "timeout": 30},
                {"op": "tool_call", "computer": "c-cx", "tool": slow, "params": {"seconds": 5}, "timeout": 1},
            ],
            auth_via="auth",
        )
    )
    assert all(r["ok"] for r in results), results
    req_id = by_op(results, "cancel")[0]["req_id"]
    # Our Server passed their cancel on to their Computer (skipping the sender).
    computer.wait_for({"event": "notify", "name": "notify:tool_call_cancel", "data": {"agent": "a-cx", "req_id": req_id}}, 10)
    if peer.handshake:
        cancelled = next(r for r in results if r["index"] == "long.0")
        assert cancelled["raw"]["meta"] == {"a2c_cancelled": True, "a2c_cancel_reason": "agent_requested"}
    # Their Agent waits exactly the request's timeout, as long as their Computer: its own
    # wait ends first, with an error result of its making (WIRE_NOTES).
    timed_out = [r for r in by_op(results, "tool_call") if r["index"] != "long.0"][0]
    assert timed_out["result"]["isError"] is True and timed_out["raw"] is None
