"""A child of `os.fork()` never uses the Agent or the Computer it inherited (issue 36).

Real parts: a Server on loopback, a Computer hosting the stdio test tool server (a child
process), an Agent; the test process forks (directly and through multiprocessing's
"fork" start method) while they are connected. In the child every call fails at once with
the one error naming the fix and `close()` is quick; the parent's session goes on as if
nothing happened: same sid, still in the office, no call from the child reached the
Computer, and its MCP server still answers.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
import traceback
from typing import Any, Callable

import pytest
from mcp_servers import tool_server_config
from office_parts import connected_computer, joined_agent

from smcp_sync import Agent, Computer
from smcp_sync.connection.session import ForkedConnectionError, ReconnectPolicy
from smcp_sync.computer.mcp.status import ComputerNotRunningError

OFFICE = "office-fork"
QUICK = ReconnectPolicy(enabled=False)
TOOLS = tool_server_config()
#: What "at once" means for a child's call and close (their timeouts are 10 s and more).
PROMPT = 3.0

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


@pytest.fixture
def office(server):
    with connected_computer("c1", [TOOLS], server.url, OFFICE, timeout=20, reconnect=QUICK) as computer:
        with joined_agent("a1", server.url, OFFICE, timeout=10, reconnect=QUICK) as agent:
            assert agent.call_tool("c1", "echo", {"text": "before"}, timeout=10).text == "before"
            yield server, computer, agent


def in_child(agent: Agent, computer: Computer) -> dict[str, Any]:
    """What the inherited Agent and Computer do in a forked child."""
    report: dict[str, Any] = {"connected": agent.connected, "office": agent.office_id}
    started = time.monotonic()
    try:
        agent.call_tool("c1", "echo", {"text": "from the child"}, timeout=30)
    except ForkedConnectionError as exc:
        report["agent_error"] = str(exc)
    report["agent_seconds"] = time.monotonic() - started
    future = agent.submit_tool_call("c1", "echo", {"text": "submitted in the child"}, timeout=30)
    report["future_error"] = type(future.exception(timeout=PROMPT)).__name__
    try:
        computer.call_tool("tools__echo", {"text": "x"}, timeout=30)
    except ComputerNotRunningError as exc:
        report["computer_error"] = str(exc)
    started = time.monotonic()
    agent.close()
    computer.close()
    report["close_seconds"] = time.monotonic() - started
    return report


def fork_and_report(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Fork; the child runs `run()` and sends its report back through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(run()).encode())
            code = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())  # the parent's failure message
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()  # ends when the child exits (bounded by the test's timeout)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    return json.loads(data)


def assert_clear_refusals(report: dict[str, Any]) -> None:
    assert report["connected"] is False and report["office"] is None
    assert "was connected to" in report["agent_error"] and "before os.fork()" in report["agent_error"]
    assert "post_fork" in report["agent_error"] and "worker_process_init" in report["agent_error"]
    assert str(os.getpid()) in report["agent_error"]  # the process whose session it is
    assert report["agent_seconds"] < PROMPT
    assert report["future_error"] == "ForkedConnectionError"
    assert "was started before os.fork()" in report["computer_error"]
    assert report["close_seconds"] < PROMPT


def assert_parent_unharmed(server, computer: Computer, agent: Agent, sid: str) -> None:
    assert agent.connected and agent._connection.sid == sid
    assert agent.call_tool("c1", "echo", {"text": "after"}, timeout=10).text == "after"
    assert [record.tool for record in computer.tool_call_history()] == ["tools__echo", "tools__echo"]  # none from a child
    assert {(s.name, s.role) for s in agent.list_room(timeout=10)} == {("a1", "agent"), ("c1", "computer")}
    assert server.registry.session(sid) is not None


def test_a_forked_child_refuses_the_inherited_agent_and_computer_and_the_parent_goes_on(office):
    server, computer, agent = office
    sid = agent._connection.sid
    report = fork_and_report(lambda: in_child(agent, computer))
    assert_clear_refusals(report)
    assert_parent_unharmed(server, computer, agent, sid)


def test_locks_held_and_a_call_in_flight_at_the_fork_do_not_block_the_child(office):
    """Another thread holds the connection's locks, and a call waits for its answer, while
    the process forks: the child neither deadlocks nor sees that call."""
    server, computer, agent = office
    connection = agent._connection
    held, release = threading.Event(), threading.Event()

    def hold_locks() -> None:
        with connection._state_changed, connection._emit_lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold_locks)
    holder.start()
    try:
        assert held.wait(10)
        report = fork_and_report(lambda: in_child(agent, computer))
    finally:
        release.set()
        holder.join(10)
    assert_clear_refusals(report)
    slow = agent.submit_tool_call("c1", "sleep", {"seconds": 0.2}, timeout=10)
    sid = connection.sid
    assert fork_and_report(lambda: {"in_flight": len(connection._pending)})["in_flight"] == 0
    assert slow.result(timeout=10).text == "slept 0.2"
    assert_parent_unharmed_after_sleep(server, computer, agent, sid)


def assert_parent_unharmed_after_sleep(server, computer: Computer, agent: Agent, sid: str) -> None:
    assert agent.call_tool("c1", "echo", {"text": "after"}, timeout=10).text == "after"
    assert [record.tool for record in computer.tool_call_history()] == ["tools__echo", "tools__sleep", "tools__echo"]
    assert server.registry.session(sid) is not None


def _report_to(queue: Any, agent: Agent, computer: Computer) -> None:
    queue.put(in_child(agent, computer))


def test_multiprocessing_fork_children_get_the_clear_error(office):
    server, computer, agent = office
    sid = agent._connection.sid
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_report_to, args=(queue, agent, computer)) for _ in range(2)]
    for child in children:
        child.start()
    try:
        reports = [queue.get(timeout=30) for _ in children]
    finally:
        for child in children:
            child.join(10)
        queue.close()
        queue.join_thread()
    assert [child.exitcode for child in children] == [0, 0]
    for report in reports:
        assert_clear_refusals(report)
    assert_parent_unharmed(server, computer, agent, sid)


def test_an_agent_closed_in_the_child_connects_there_on_its_own(office):
    """`connect()` in the child opens the child's own session (the parent keeps its own)."""
    server, computer, agent = office
    sid = agent._connection.sid

    def reconnect() -> dict[str, Any]:
        with Agent("a-child", reconnect=QUICK) as child_agent:
            child_agent.connect(server.url, timeout=10)
            child_agent.join_office("office-of-the-child", timeout=10)
            agent.connect(server.url, timeout=10)  # the inherited one, on a session of its own
            report = {"sid": agent._connection.sid, "rooms": len(child_agent.list_room(timeout=10))}
            agent.close()
            return report

    report = fork_and_report(reconnect)
    assert report["sid"] not in (None, sid) and report["rooms"] == 1
    assert_parent_unharmed(server, computer, agent, sid)
