"""Leaks: after a full session — Server, a Computer with two stdio MCP servers, an Agent
making every kind of request, a notification, a cancelled call — closing everything
brings the threads and child processes back to what they were, promptly, with no child
left unreaped."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import NotFoundError

from .parts import CallLogs, Notes, join_agent, mcp_children, start_computer, start_server, tool_server, wait_until

OFFICE = "leaks"
#: Seconds closing everything may take before the threads and processes must be gone.
CLOSE_BUDGET = 3.0


def _threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.is_alive()}


def _children() -> set[int]:
    """Child processes, zombies included: a child nobody waited for is a leak too."""
    return {child.pid for child in psutil.Process().children(recursive=True)}


@pytest.mark.timeout(60)
def test_closing_everything_brings_threads_and_processes_back_to_baseline(stack, tmp_path):
    threads, children = _threads(), _children()
    with stack.pop_all() as session:
        server = start_server(session)
        logs = CallLogs(tmp_path)
        tools, more = tool_server(env=logs.env), tool_server("more", prefix="m_")
        start_computer(session, "c1", server.url, OFFICE, tools, more)
        agent = join_agent(session, "a1", server.url, OFFICE)
        notes = Notes.of_agent(agent)
        assert len(mcp_children()) == 2

        futures = [agent.submit_tool_call("c1", "echo", {"text": str(n)}, timeout=10) for n in range(20)]
        assert sorted(int(f.result(10).text) for f in futures) == list(range(20))
        assert agent.call_tool("c1", "m_add", {"a": 1, "b": 2}, timeout=10).text == "3"
        assert agent.call_tool("c1", "add_tool", {"name": "extra"}, timeout=10).text == "added extra"
        notes.wait_for(events.UPDATE_TOOL_LIST_NOTIFICATION, {"computer": "c1"})
        assert {s.name for s in agent.list_room(timeout=10)} == {"a1", "c1"}
        assert agent.get_config("c1", timeout=10).servers.keys() == {"tools", "more"}
        assert agent.get_desktop("c1", timeout=10) == []
        sleeping = agent.submit_tool_call("c1", "sleep", {"seconds": 30.5}, timeout=20)
        logs.wait_started(30.5)
        agent.cancel_tool_call(sleeping.req_id)
        assert sleeping.result(10).meta["a2c_cancelled"] is True
        closing = time.monotonic()

    wait_until(lambda: _threads() <= threads and _children() <= children, CLOSE_BUDGET, "everything stopped")
    assert time.monotonic() - closing < CLOSE_BUDGET


@pytest.mark.timeout(60)
def test_closing_a_computer_with_a_call_in_flight_is_prompt(stack, tmp_path):
    logs = CallLogs(tmp_path)
    server = start_server(stack)
    computer = start_computer(stack, "c1", server.url, OFFICE, tool_server(env=logs.env))
    agent = join_agent(stack, "a1", server.url, OFFICE)
    call = agent.submit_tool_call("c1", "sleep", {"seconds": 30.5}, timeout=20)
    logs.wait_started(30.5)

    closing = time.monotonic()
    computer.close()
    assert time.monotonic() - closing < CLOSE_BUDGET
    with pytest.raises(NotFoundError):  # the Server fails the call when the Computer leaves
        call.result(10)
