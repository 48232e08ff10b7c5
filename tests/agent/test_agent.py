"""The Agent against the real `SMCPServer`, with Computers played by scripted connections
(answers a real Computer gives rarely or never: hangs, wrong req_ids, malformed data)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from office_parts import joined_agent
from smcp_sync.connection.session import NotConnectedError

from smcp_sync.agent import Agent
from smcp_sync.protocol import events
from smcp_sync.protocol.conventions import DEFAULT_TOOL_TIMEOUT
from smcp_sync.protocol.errors import InternalError, NotFoundError, OfficeError, SMCPTimeoutError
from smcp_sync.protocol.models import (
    CallToolResult,
    EnterOfficeNotification,
    GetComputerConfigRet,
    LeaveOfficeNotification,
    SessionInfo,
    SMCPTool,
    UpdateComputerConfigReq,
)
from smcp_sync.server import SMCPServer

from .recorder import Timeline
from .scripted_computer import FAST_RECONNECT, ScriptedComputer, tool

OFFICE = "office-1"


@pytest.fixture
def agent(server):
    with joined_agent("a1", server.url, OFFICE, timeout=5, reconnect=FAST_RECONNECT) as joined:
        yield joined


@pytest.fixture
def computer(server, agent):
    scripted = ScriptedComputer("c1").start(server.url, OFFICE)
    assert agent.tool_cache.wait_for("c1", timeout=5), "the agent never cached c1's tools"
    yield scripted
    scripted.close()


# -- office, notifications and the tool cache ----------------------------------------------


@pytest.mark.timeout(30)
def test_a_computer_entering_is_announced_then_its_tools_are_cached(server, agent):
    timeline = Timeline()
    agent.on(events.ENTER_OFFICE_NOTIFICATION, timeline.notified)
    agent.on_cache_update(timeline.cache_updated)
    scripted = ScriptedComputer("c1").start(server.url, OFFICE)
    entered = EnterOfficeNotification(office_id=OFFICE, computer="c1")
    try:
        timeline.wait(lambda entries: timeline.after(entered, "tools", "c1"))
        [cached, *_] = timeline.after(entered, "tools", "c1")
        assert [t.name for t in cached] == ["echo", "fail", "hang"]
        assert all(isinstance(t, SMCPTool) for t in cached)
        assert cached[0].tool_meta.tags == ["test"]
        assert agent.tool_cache.get("c1") == cached
    finally:
        scripted.close()


@pytest.mark.timeout(30)
def test_joining_an_office_caches_the_computers_already_there(server):
    early = [ScriptedComputer(name).start(server.url, OFFICE) for name in ("c1", "c2")]
    try:
        with joined_agent("a1", server.url, OFFICE, timeout=5) as agent:
            assert agent.tool_cache.wait_for("c2", timeout=5) and agent.tool_cache.wait_for("c1", timeout=5)
            assert agent.tool_cache.computers() == ["c1", "c2"]
    finally:
        for scripted in early:
            scripted.close()


@pytest.mark.timeout(30)
def test_leaving_drops_the_computer_and_update_tool_list_refreshes(server, agent, computer):
    timeline = Timeline()
    agent.on(events.UPDATE_TOOL_LIST_NOTIFICATION, timeline.notified)
    agent.on_cache_update(timeline.cache_updated)
    cached_when_left = []
    agent.on(events.LEAVE_OFFICE_NOTIFICATION, lambda note: cached_when_left.append(agent.tool_cache.get(note.computer)))
    agent.on(events.LEAVE_OFFICE_NOTIFICATION, timeline.notified)

    computer.change_tools((tool("echo"), tool("added")))
    updated = UpdateComputerConfigReq(computer="c1")
    timeline.wait(lambda entries: timeline.after(updated, "tools", "c1"))
    assert [[t.name for t in cached] for cached in timeline.after(updated, "tools", "c1")] == [["echo", "added"]]

    computer.close()
    timeline.wait(lambda entries: ("notified", LeaveOfficeNotification(office_id=OFFICE, computer="c1")) in entries)
    assert cached_when_left == [None] and "c1" not in agent.tool_cache  # dropped before the callbacks


@pytest.mark.timeout(30)
def test_list_room_lists_every_session_of_the_office(agent, computer):
    sessions = agent.list_room(timeout=5)
    assert {(s.name, s.role, s.office_id) for s in sessions} == {("a1", "agent", OFFICE), ("c1", "computer", OFFICE)}
    assert all(isinstance(s, SessionInfo) and s.sid for s in sessions)
    assert "<td>agent</td><td>a1</td>" in sessions._repr_html_()  # a table in a notebook


@pytest.mark.timeout(30)
def test_leave_office_clears_the_cache_and_requests_are_then_refused(agent, computer):
    agent.leave_office(timeout=5)
    assert agent.office_id is None and agent.tool_cache.snapshot() == {}
    with pytest.raises(OfficeError) as not_in_office:
        agent.get_tools("c1", timeout=5)
    assert not_in_office.value.code == 4103
    with pytest.raises(OfficeError, match="join an office"):
        agent.list_room()


@pytest.mark.timeout(30)
def test_callbacks_run_on_one_thread_that_may_call_the_agent(server, agent):
    results, threads = [], set()

    def on_enter(notification: EnterOfficeNotification) -> None:
        threads.add(threading.current_thread().name)
        results.append(agent.call_tool(notification.computer, "echo", {"from": "callback"}, timeout=5))

    timeline = Timeline()
    agent.on(events.ENTER_OFFICE_NOTIFICATION, on_enter)
    agent.on(events.ENTER_OFFICE_NOTIFICATION, timeline.notified)  # registered second: runs after on_enter
    computers = [ScriptedComputer(name).start(server.url, OFFICE) for name in ("c1", "c2")]
    try:
        timeline.wait(lambda entries: len(entries) == 2)
        assert [r.structured_content for r in results] == [{"from": "callback"}] * 2
        assert threads == {"smcp-agent-a1-notify"}
    finally:
        for scripted in computers:
            scripted.close()


@pytest.mark.timeout(30)
def test_desktops_are_fetched_on_demand_unless_prefetch_is_asked_for(server):
    computer = ScriptedComputer("c1").start(server.url, OFFICE)
    try:
        for prefetch in (False, True):
            with Agent("a1", prefetch_desktop=prefetch) as agent:
                timeline = Timeline()
                agent.on(events.UPDATE_DESKTOP_NOTIFICATION, timeline.notified)
                agent.on_cache_update(timeline.cache_updated)
                agent.connect(server.url, timeout=5)
                agent.join_office(OFFICE, timeout=5)
                agent.tool_cache.wait_for("c1", timeout=5)
                computer.desktops = [f"window://desk.test/main\n\nprefetch={prefetch}"]
                computer.connection.emit(events.UPDATE_DESKTOP, {"computer": "c1"})
                timeline.wait(lambda entries: ("notified", UpdateComputerConfigReq(computer="c1")) in entries)
                if prefetch:  # fetched on joining, and again after the update: two cache updates
                    timeline.wait(lambda entries: sum(e[:2] == ("desktop", "c1") for e in entries) == 2)
                    assert agent.desktop_cache.get("c1") == ("window://desk.test/main\n\nprefetch=True",)
                    assert len([e for e, _ in computer.received if e == events.GET_DESKTOP]) == 2
                else:
                    fetched = [e for e, _ in computer.received if e == events.GET_DESKTOP]
                    assert fetched == [] and agent.desktop_cache.snapshot() == {}
    finally:
        computer.close()


def test_unknown_notifications_and_bad_callbacks_are_refused():
    agent = Agent("a1")
    with pytest.raises(ValueError, match="unknown notification 'notify:nothing'; expected one of notify:enter_office"):
        agent.on("notify:nothing", print)
    with pytest.raises(TypeError, match="callback must be callable"):
        agent.on(events.ENTER_OFFICE_NOTIFICATION, "print")
    with pytest.raises(ValueError, match="an Agent needs a non-empty name"):
        Agent("")


# -- requests to a Computer -------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_get_tools_config_and_desktop_return_models(agent, computer):
    tools = agent.get_tools("c1", timeout=5)
    assert [t.name for t in tools] == ["echo", "fail", "hang"]
    assert repr(tools) == "ToolList(3 tools: 'echo', 'fail', 'hang')" and "<td>echo</td>" in tools._repr_html_()
    assert agent.get_config("c1", timeout=5) == GetComputerConfigRet(servers={}, inputs=[])
    assert agent.get_desktop("c1", timeout=5) == ["window://desk.test/main\n\nhello"]
    _, request = computer.received[-1]
    assert request["agent"] == "a1" and request["computer"] == "c1" and "desktop_size" not in request

    agent.get_desktop("c1", desktop_size=3, window="window://desk.test/main", timeout=5)
    _, request = computer.received[-1]
    assert (request["desktop_size"], request["window"]) == (3, "window://desk.test/main")


@pytest.mark.timeout(30)
def test_every_request_has_its_own_req_id_and_a_wrong_one_in_the_answer_is_refused(agent, computer):
    agent.get_tools("c1", timeout=5)
    agent.get_tools("c1", timeout=5)
    ids = [payload["req_id"] for event, payload in computer.received if event == events.GET_TOOLS]
    assert len(set(ids)) == len(ids) and all(len(i) == 32 for i in ids)

    computer.tools_answer_req_id = "someone-else"
    with pytest.raises(InternalError) as wrong:
        agent.get_tools("c1", timeout=5)
    assert wrong.value.code == 500 and "carries req_id 'someone-else'" in wrong.value.message


@pytest.mark.timeout(30)
def test_a_malformed_answer_is_a_500_naming_the_field(agent, computer):
    computer.desktops = [1, 2]
    with pytest.raises(InternalError) as bad:
        agent.get_desktop("c1", timeout=5)
    assert bad.value.code == 500
    assert bad.value.message.startswith("bad answer to client:get_desktop: invalid GetDeskTopRet:")
    assert "$.desktops[0]" in bad.value.message


@pytest.mark.timeout(30)
def test_unknown_computer_and_other_office_are_404(server, agent):
    elsewhere = ScriptedComputer("c9").start(server.url, "office-2")
    try:
        for name in ("nobody", "c9"):
            with pytest.raises(NotFoundError) as missing:
                agent.call_tool(name, "echo", {}, timeout=5)
            assert missing.value.code == 404 and name in missing.value.message
        assert elsewhere.received == []
    finally:
        elsewhere.close()


# -- tool calls -----------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_call_tool_results_success_tool_error_and_unknown_tool(agent, computer):
    ok = agent.call_tool("c1", "echo", {"a": [1, "b"]}, timeout=5)
    assert isinstance(ok, CallToolResult) and not ok.is_error
    assert json.loads(ok.text) == {"a": [1, "b"]} and ok.structured_content == {"a": [1, "b"]}

    failed = agent.call_tool("c1", "fail", {}, timeout=5)
    assert failed.is_error and failed.error_code == 4003 and "always does" in failed.text

    unknown = agent.call_tool("c1", "nope", {}, timeout=5)
    assert unknown.is_error and unknown.error_code == 4001

    [request] = [p for e, p in computer.received if e == events.TOOL_CALL and p["tool_name"] == "echo"]
    assert request == {"agent": "a1", "req_id": request["req_id"], "computer": "c1", "tool_name": "echo", "params": {"a": [1, "b"]}, "timeout": 5}


@pytest.mark.timeout(30)
def test_a_call_without_a_timeout_asks_the_computer_for_the_default(agent, computer):
    agent.call_tool("c1", "echo", {"n": 1})
    agent.submit_tool_call("c1", "echo", {"n": 2}).result(timeout=10)
    asked = [p["timeout"] for e, p in computer.received if e == events.TOOL_CALL]
    assert asked == [DEFAULT_TOOL_TIMEOUT, DEFAULT_TOOL_TIMEOUT] and DEFAULT_TOOL_TIMEOUT == 60.0


@pytest.mark.timeout(30)
def test_bad_timeouts_are_refused_before_sending(agent, computer):
    for bad in (0, -1, float("inf"), "5", True):
        with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
            agent.call_tool("c1", "echo", {}, timeout=bad)
        with pytest.raises(ValueError):
            agent.submit_tool_call("c1", "echo", {}, timeout=bad)
    assert not [e for e, _ in computer.received if e == events.TOOL_CALL]


@pytest.mark.timeout(30)
def test_params_that_are_not_a_mapping_of_names_are_refused_naming_params(agent, computer):
    for bad in ([1, 2], "a=1", {1: "x"}):
        with pytest.raises(TypeError, match="params must be a mapping of argument names"):
            agent.call_tool("c1", "echo", bad)
        with pytest.raises(TypeError, match="params must be a mapping"):
            agent.submit_tool_call("c1", "echo", bad)
    assert not [e for e, _ in computer.received if e == events.TOOL_CALL]


@pytest.mark.timeout(30)
def test_a_server_timeout_cancels_the_call_at_the_computer(agent, computer):
    started = time.monotonic()
    with pytest.raises(SMCPTimeoutError) as timed_out:
        agent.call_tool("c1", "hang", {}, timeout=0.2)
    elapsed = time.monotonic() - started

    req_id = timed_out.value.details["req_id"]
    assert timed_out.value.code == 408 and "cancel sent" in timed_out.value.message
    assert 2.0 <= elapsed < 4.0  # the Server's 408 (0.2 s + its 2 s buffer) came first
    computer.wait_for(lambda: req_id in computer.cancelled)


@pytest.mark.timeout(30)
def test_the_agents_own_timeout_cancels_the_call_at_the_computer(no_leaks):
    patient = SMCPServer(tool_call_buffer=60)  # the Server would wait a minute
    url = patient.start()
    scripted = ScriptedComputer("c1").start(url, OFFICE)
    try:
        with joined_agent("a1", url, OFFICE, timeout=5) as agent:
            started = time.monotonic()
            with pytest.raises(SMCPTimeoutError) as timed_out:
                agent.call_tool("c1", "hang", {}, timeout=0.2)
            elapsed = time.monotonic() - started
            assert 4.2 <= elapsed < 6.0  # timeout + AGENT_TIMEOUT_BUFFER
            assert "no answer to client:tool_call within 4.2s" in timed_out.value.message
            req_id = timed_out.value.details["req_id"]
            scripted.wait_for(lambda: req_id in scripted.cancelled)
            [cancel] = [p for e, p in scripted.received if e == events.CANCEL_TOOL_CALL_NOTIFICATION]
            assert cancel == {"agent": "a1", "req_id": req_id}
    finally:
        scripted.close()
        patient.stop()


@pytest.mark.timeout(30)
def test_submitted_calls_run_in_the_background_and_can_be_cancelled(agent, computer):
    hanging = agent.submit_tool_call("c1", "hang", {}, timeout=20)
    echoed = agent.submit_tool_call("c1", "echo", {"n": 1}, timeout=5)
    assert echoed.result(timeout=5).structured_content == {"n": 1}
    assert len({hanging.req_id, echoed.req_id}) == 2

    computer.wait_for(lambda: any(p["req_id"] == hanging.req_id for e, p in computer.received if e == events.TOOL_CALL))
    agent.cancel_tool_call(hanging.req_id)
    cancelled = hanging.result(timeout=5)
    assert cancelled.is_error and cancelled.meta["a2c_cancelled"] is True
    assert computer.cancelled == [hanging.req_id]


@pytest.mark.timeout(30)
def test_a_queued_submission_is_cancelled_without_reaching_the_computer(server):
    computer = ScriptedComputer("c1").start(server.url, OFFICE)
    try:
        with joined_agent("a1", server.url, OFFICE, timeout=5, max_concurrent_calls=1) as agent:
            running = agent.submit_tool_call("c1", "hang", {}, timeout=20)
            queued = agent.submit_tool_call("c1", "echo", {"never": True}, timeout=5)
            agent.cancel_tool_call(queued.req_id)
            assert queued.cancelled()
            agent.cancel_tool_call(running.req_id)
            assert running.result(timeout=5).is_error
    finally:
        computer.close()
    assert [p["tool_name"] for e, p in computer.received if e == events.TOOL_CALL] == ["hang"]


@pytest.mark.timeout(60)
def test_concurrent_calls_from_many_threads_each_get_their_own_answer(agent, computer):
    errors: list[str] = []

    def worker(thread: int) -> None:
        for n in range(50):
            params = {"thread": thread, "n": n}
            result = agent.call_tool("c1", "echo", params, timeout=10)
            if result.structured_content != params:
                errors.append(f"{params} got {result.structured_content}")

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(50)
    assert errors == [] and not any(w.is_alive() for w in workers)


# -- lifecycle --------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_after_the_server_drops_every_connection_the_agent_rejoins_and_refreshes(server, agent, computer):
    computer.change_tools((tool("echo"), tool("new")), notify=False)
    old = agent.tool_cache.get("c1")
    first_sid = agent._connection.sid

    server.drop_connections()  # both clients see a lost transport and reconnect

    fresh = agent.tool_cache.wait_for("c1", timeout=15, unlike=old)
    assert [t.name for t in fresh] == ["echo", "new"]
    assert agent.office_id == OFFICE and agent._connection.sid != first_sid
    assert {s.name for s in agent.list_room(timeout=5)} == {"a1", "c1"}


@pytest.mark.timeout(30)
def test_close_stops_everything_and_calls_then_fail_fast(server):
    computer = ScriptedComputer("c1").start(server.url, OFFICE)
    agent = Agent("a1")
    try:
        agent.connect(server.url, timeout=5)
        agent.join_office(OFFICE, timeout=5)
        hanging = agent.submit_tool_call("c1", "hang", {}, timeout=20)
        computer.wait_for(lambda: any(e == events.TOOL_CALL for e, _ in computer.received))

        started = time.monotonic()
        agent.close()
        assert time.monotonic() - started < 1.0
        with pytest.raises(NotConnectedError):
            hanging.result(timeout=1)
        with pytest.raises(NotConnectedError):
            agent.call_tool("c1", "echo", {}, timeout=5)
        assert agent.tool_cache.snapshot() == {}
        agent.close()  # idempotent
    finally:
        agent.close()
        computer.close()
