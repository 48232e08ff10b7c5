"""Wire interop: our Agent on each official SDK version's Server (a2c-smcp 0.4.2 with its
version middleware on, and 0.1.6), calling that version's Computer.

Server and Computer run as child processes in that version's virtualenv, once per module
and version (`tests/interop`); each test joins its own Agent. Three tests use other
Servers: their gate made to speak another version, our Server with their Computer coming,
changing and going, and their stock async Server (uvicorn) with its default auth. Our Agent presents the key
where that Server reads it by default (`OfficialPeer.server_auth`: 0.4.2 ``auth.token``;
0.1.6's harness Server ``auth.access_token``, as its stock provider refuses every WSGI
client) and, for 0.4.2, passes its version gate. Wire facts: `tests/interop/WIRE_NOTES.md`
and `WIRE_NOTES_0.4.2.md`; what cannot interoperate is in the interop matrix of docs/wire/compatibility.md.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Callable

import pytest
from interop.harness import echo_mcp_config, start_official_computer, start_official_server
from mcp_servers import TOOL_SERVER
from office_parts import joined_agent
from smcp_sync.connection.session import ReconnectPolicy

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer, allow_all
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ForbiddenError, NotFoundError, SMCPError, SMCPTimeoutError, VersionMismatchError
from smcp_sync.protocol.models import EnterOfficeNotification, LeaveOfficeNotification

from .recorder import Timeline

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"
OFFICE = "o-peers"
NO_RECONNECT = ReconnectPolicy(enabled=False)


@pytest.fixture(scope="module")
def their_office(official_peer):
    """Their Server (version gate on for 0.4.2) with their Computer `c-off` in OFFICE."""
    peer = official_peer
    with (
        start_official_server(peer.python, api_key=KEY, trace=False) as server,
        start_official_computer(
            peer.python, server.url, OFFICE, "c-off", echo_mcp_config(peer.python), auth_via=peer.auth_via_own_server
        ) as computer,
    ):
        yield peer, server, computer


@pytest.fixture
def agent(their_office, no_leaks):
    peer, server, _ = their_office
    with contextlib.ExitStack() as stack:
        yield _join_once_the_office_is_free(stack, server.url, peer.server_auth(KEY))


def _join_once_the_office_is_free(stack: contextlib.ExitStack, url: str, auth: dict) -> Agent:
    """Our Agent "a-ours" in OFFICE; their Server refuses a new Agent with "Agent already in
    room" until it has forgotten the previous test's one (WIRE_NOTES.md), so retry a while."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return stack.enter_context(joined_agent("a-ours", url, OFFICE, timeout=10, auth=auth, reconnect=NO_RECONNECT))
        except ForbiddenError as exc:
            if "Agent already in room" not in exc.message or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_tools_calls_timeout_and_errors(their_office, agent):
    peer = their_office[0]
    echo, add, fail, slow = (peer.tool("echo", name) for name in ("echo", "add", "fail", "slow"))
    cached = agent.tool_cache.wait_for("c-off", timeout=20)
    assert cached is not None, "the tools of their Computer were never cached"
    tools = agent.get_tools("c-off", timeout=20)
    assert {echo, add, fail, slow} <= {tool.name for tool in tools}
    assert {tool.name for tool in cached} == {tool.name for tool in tools}

    assert agent.call_tool("c-off", echo, {"text": "hi from smcp_sync"}, timeout=20).text == "hi from smcp_sync"
    assert agent.call_tool("c-off", add, {"a": 2, "b": 3}, timeout=20).text == "5"
    failed = agent.call_tool("c-off", fail, {"message": "boom"}, timeout=20)
    assert failed.is_error and "boom" in failed.text
    assert agent.call_tool("c-off", "nope", {}, timeout=20).is_error

    if peer.handshake:
        # 0.4.2's Server waits for the Computer exactly the request's timeout, then its
        # handler raises and nothing is acked: our Agent's own deadline answers (and cancels).
        with pytest.raises(SMCPTimeoutError, match="cancel sent"):
            agent.call_tool("c-off", slow, {"seconds": 5}, timeout=1)
    else:  # 0.1.6's Server waits without limit: the Computer's own timeout result arrives
        timed_out = agent.call_tool("c-off", slow, {"seconds": 5}, timeout=1)
        assert timed_out.is_error and "timed out" in timed_out.text


def test_cancel_reaches_their_computer(their_office, agent):
    peer, _, computer = their_office
    mark = computer.mark()
    # 0.4.2 stops the call; 0.1.6 ignores the notice and lets it run to its timeout (short here).
    future = agent.submit_tool_call("c-off", peer.tool("echo", "slow"), {"seconds": 30}, timeout=20 if peer.handshake else 4)
    computer.wait_for({"event": "recv", "name": "client:tool_call"}, 20, after=mark)
    agent.cancel_tool_call(future.req_id)
    computer.wait_for({"event": "notify", "name": "notify:tool_call_cancel", "data": {"req_id": future.req_id}}, 20, after=mark)
    result = future.result(timeout=30)
    assert result.is_error
    if peer.handshake:
        assert result.meta["a2c_cancelled"] is True
        computer.wait_for({"event": "reply", "name": "client:tool_call", "data": {"meta": {"a2c_cancelled": True}}}, 20, after=mark)
    else:
        assert "timed out" in result.text


def test_desktop_list_room_and_config(their_office, agent):
    peer = their_office[0]
    desktops = agent.get_desktop("c-off", timeout=20)
    assert desktops[0] == "window://echo.test/main?priority=50\n\nhello from the echo main window"
    assert agent.get_desktop("c-off", desktop_size=1, timeout=20) == desktops[:1]

    sessions = agent.list_room(timeout=20)
    assert {(s.name, s.role, s.office_id) for s in sessions} == {("a-ours", "agent", OFFICE), ("c-off", "computer", OFFICE)}
    if peer.handshake:  # their Server lists the version each client announced, ours included
        assert {s.a2c_version for s in sessions} == {"0.4.0"}

    if peer.handshake:
        assert set(agent.get_config("c-off", timeout=20).servers) == {"echo"}
    else:  # 0.1.6's Server has no client:get_config route: it acks empty at once
        with pytest.raises(NotFoundError, match="empty answer to client:get_config"):
            agent.get_config("c-off", timeout=20)


def test_get_resources(their_office, agent):
    peer = their_office[0]
    if not peer.handshake:
        pytest.skip("a2c-smcp 0.1.6 has no client:get_resources (its Server does not route it)")
    page = agent.get_resources("c-off", "echo", timeout=20)
    by_uri = {resource.uri: resource for resource in page.resources}
    assert set(by_uri) == {"window://echo.test/main?priority=50", "window://echo.test/aux?priority=10", "note://echo.test/readme"}
    assert by_uri["note://echo.test/readme"].mime_type == "text/plain"
    assert page.next_cursor is None
    with pytest.raises(SMCPError) as refused:
        agent.get_resources("c-off", "nope", timeout=20)
    assert refused.value.code == 4014


def test_our_extensions_are_refused_at_once(agent):
    """get_finder / read_resource / complete are smcp_sync extensions: against an official
    peer our Agent says so at once (a 404 naming the reason), instead of timing out."""
    attempts = {
        "get_finder": lambda: agent.get_finder("c-off", timeout=60),
        "read_resource": lambda: agent.read_resource("c-off", "window://echo.test/main?priority=50", timeout=60),
        "complete": lambda: agent.complete("c-off", "dpe://x/{doc_ref}", "doc_ref", timeout=60),
    }
    for name, attempt in attempts.items():
        with pytest.raises(NotFoundError) as refused:
            attempt()
        assert (refused.value.details or {}).get("reason") == "extension_not_supported", (name, refused.value)


def test_enter_update_and_leave_notifications(their_office, agent):
    peer, server, _ = their_office
    seen: list[tuple[str, object]] = []
    changed = threading.Condition()

    def record(event: str):
        def callback(notification) -> None:
            with changed:
                seen.append((event, notification))
                changed.notify_all()

        return callback

    for event in (
        events.ENTER_OFFICE_NOTIFICATION,
        events.UPDATE_TOOL_LIST_NOTIFICATION,
        events.UPDATE_DESKTOP_NOTIFICATION,
        events.LEAVE_OFFICE_NOTIFICATION,
    ):
        agent.on(event, record(event))

    def wait_for(event: str) -> object:
        with changed:
            assert changed.wait_for(lambda: any(e == event for e, _ in seen), 30), f"no {event}: {seen}"
            return next(n for e, n in seen if e == event)

    late = start_official_computer(
        peer.python, server.url, OFFICE, "c-late", echo_mcp_config(peer.python, host_id="late.test"),
        auth_via=peer.auth_via_own_server,
    )
    try:
        assert wait_for(events.ENTER_OFFICE_NOTIFICATION) == EnterOfficeNotification(office_id=OFFICE, computer="c-late")
        assert peer.tool("echo", "echo") in {tool.name for tool in agent.tool_cache.wait_for("c-late", timeout=20) or ()}
        late.send({"op": "update_tool_list"})
        assert wait_for(events.UPDATE_TOOL_LIST_NOTIFICATION).computer == "c-late"
        late.send({"op": "update_desktop"})
        assert wait_for(events.UPDATE_DESKTOP_NOTIFICATION).computer == "c-late"
    finally:
        late.stop()
    assert wait_for(events.LEAVE_OFFICE_NOTIFICATION) == LeaveOfficeNotification(office_id=OFFICE, computer="c-late")
    assert "c-late" not in agent.tool_cache


def test_their_version_gate_refuses_our_clients_with_both_versions(official_peer, no_leaks):
    """Their 0.4.2 gate made to speak 0.5.0: our Agent and Computer get the typed 4008."""
    if not official_peer.handshake:
        pytest.skip("a2c-smcp 0.1.6's Server has no version gate")
    with start_official_server(official_peer.python, api_key=KEY, trace=False, gate_version="0.5.0") as server:
        with Agent("a-v", auth=official_peer.server_auth(KEY), reconnect=NO_RECONNECT) as agent:
            with pytest.raises(VersionMismatchError) as refused:
                agent.connect(server.url, timeout=10)
        assert (refused.value.client_version, refused.value.server_version) == ("0.4.0", "0.5.0")
        with Computer("c-v", []) as computer:
            with pytest.raises(VersionMismatchError) as refused:
                computer.connect(server.url, OFFICE, auth=official_peer.server_auth(KEY))
        assert (refused.value.client_version, refused.value.server_version) == ("0.4.0", "0.5.0")


def test_our_agent_hears_their_computer_on_our_server(official_peer, server, spawn):
    """Our Server (no auth), our Agent, their Computer: enter (tools cached), tool list and
    desktop changes (tools re-fetched), leave (tools dropped)."""
    peer = official_peer
    timeline = Timeline()
    with joined_agent("a-hears", server.url, "o-hears", timeout=10) as agent:
        for event in (
            events.ENTER_OFFICE_NOTIFICATION,
            events.UPDATE_TOOL_LIST_NOTIFICATION,
            events.UPDATE_DESKTOP_NOTIFICATION,
            events.LEAVE_OFFICE_NOTIFICATION,
        ):
            agent.on(event, lambda notification, event=event: timeline.notified((event, notification)))
        agent.on_cache_update(timeline.cache_updated)

        def heard(event: str) -> Callable[[list], bool]:
            return lambda entries: any(e[0] == "notified" and e[1][0] == event for e in entries)

        def fetched_tools(times: int) -> Callable[[list], bool]:
            return lambda entries: sum(1 for e in entries if e[:2] == ("tools", "c-hears")) >= times

        computer = spawn(
            start_official_computer(peer.python, server.url, "o-hears", "c-hears", echo_mcp_config(peer.python), auth_via="auth")
        )
        entries = timeline.wait(fetched_tools(1), 30)
        enter = EnterOfficeNotification(office_id="o-hears", computer="c-hears")
        assert ("notified", (events.ENTER_OFFICE_NOTIFICATION, enter)) in entries
        assert peer.tool("echo", "echo") in {tool.name for tool in agent.tool_cache.get("c-hears")}

        computer.send({"op": "update_tool_list"})
        timeline.wait(heard(events.UPDATE_TOOL_LIST_NOTIFICATION), 30)
        timeline.wait(fetched_tools(2), 30)
        computer.send({"op": "update_desktop"})
        timeline.wait(heard(events.UPDATE_DESKTOP_NOTIFICATION), 30)

        computer.stop()
        leave = LeaveOfficeNotification(office_id="o-hears", computer="c-hears")
        timeline.wait(lambda entries: ("notified", (events.LEAVE_OFFICE_NOTIFICATION, leave)) in entries, 30)
        assert "c-hears" not in agent.tool_cache


def test_our_clients_reach_their_stock_server_with_its_default_auth(official_peer, no_leaks, spawn):
    """Their async Server as shipped (stock auth provider, uvicorn; 0.4.2 behind its version
    gate): our Agent and Computer present the key where it reads it, 0.1.6's HTTP header
    included, and meet their Computer there."""
    peer = official_peer
    credentials = peer.stock_credentials(KEY)
    server = spawn(start_official_server(peer.python, api_key=KEY, asgi=True))
    spawn(start_official_computer(peer.python, server.url, "o-stock", "c-theirs", echo_mcp_config(peer.python), auth_via="sdk"))
    with (
        Computer("c-ours", [{"name": "tools", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER]}}], confirm=allow_all) as ours,
        Agent("a-stock", reconnect=NO_RECONNECT, **credentials) as agent,
    ):
        ours.connect(server.url, "o-stock", **credentials)
        agent.connect(server.url, timeout=10)
        agent.join_office("o-stock", timeout=10)
        assert {s.name for s in agent.list_room(timeout=20)} == {"a-stock", "c-theirs", "c-ours"}
        assert agent.call_tool("c-theirs", peer.tool("echo", "echo"), {"text": "to theirs"}, timeout=20).text == "to theirs"
        assert agent.call_tool("c-ours", "tools__echo", {"text": "to ours"}, timeout=20).text == "to ours"
    accepted = [a for a in server.find_all("auth") if a["ok"]]
    assert len(accepted) == 3 and not [a for a in server.find_all("auth") if not a["ok"]]
