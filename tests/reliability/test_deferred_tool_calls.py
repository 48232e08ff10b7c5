"""A Computer answers an Agent's tool call from its event loop when the call ends, with
no thread waiting for it (`Connection.on_deferred`, `ToolCaller.start`). These tests hold
that promise and its hazard: many slow calls cost no threads, and answers to a Server
that reads nothing never stall the loop (the Computer's MCP sessions live there)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from .parts import CallLogs, join_agent, start_computer, start_server, tool_server, wait_until

OFFICE = "deferred"


def _started_calls(logs: CallLogs) -> int:
    return len(logs.started.read_text(encoding="utf-8").splitlines()) if logs.started.exists() else 0


def _threads_but_agent_calls() -> int:
    """Threads of this process (Server, Computer, Agent) but the Agent's one per call."""
    return sum(1 for thread in threading.enumerate() if not thread.name.startswith("smcp-a1-call"))


def _computer_workers() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("smcp-computer-worker"))


@pytest.mark.timeout(60)
def test_slow_tool_calls_in_flight_hold_no_computer_threads(stack, tmp_path):
    logs = CallLogs(tmp_path)
    server = start_server(stack)
    start_computer(stack, "c1", server.url, OFFICE, tool_server(env=logs.env))
    count = 40
    agent = join_agent(stack, "a1", server.url, OFFICE, max_concurrent_calls=count)
    agent.call_tool("c1", "echo", {"text": "warm"}, timeout=10)  # the Agent's call thread exists
    threads_before = _threads_but_agent_calls()

    calls = [agent.submit_tool_call("c1", "sleep", {"seconds": 2.0 + i / 1000}, timeout=30) for i in range(count)]
    wait_until(lambda: _started_calls(logs) == count, 20, "every call started on the MCP server")

    # All 40 run on the MCP server at once; no process here (the Server and Computer
    # route and answer them; the Agent waits one thread per call) has a thread per call.
    assert _computer_workers() <= 4
    assert _threads_but_agent_calls() - threads_before <= 8
    answers = [call.result(timeout=30) for call in calls]
    assert [answer.text for answer in answers] == [f"slept {2.0 + i / 1000}" for i in range(count)]


@pytest.mark.timeout(60)
def test_a_call_waiting_for_confirmation_holds_up_no_other_call(stack, tmp_path):
    operator = threading.Event()
    server = start_server(stack)
    confirm = lambda call: call.tool != "sleep" or operator.wait(30)  # noqa: E731
    start_computer(stack, "c1", server.url, OFFICE, tool_server(), confirm=confirm)
    agent = join_agent(stack, "a1", server.url, OFFICE)

    waiting = agent.submit_tool_call("c1", "sleep", {"seconds": 0.01}, timeout=30)
    assert agent.call_tool("c1", "echo", {"text": "meanwhile"}, timeout=10).text == "meanwhile"
    assert not waiting.done()
    operator.set()
    assert waiting.result(timeout=10).text == "slept 0.01"


@pytest.mark.timeout(120)
def test_answers_to_a_server_that_reads_nothing_do_not_stall_the_computer(server_process, stack, tmp_path):
    """The Server is stopped (SIGSTOP) while answers worth more than both socket buffers
    come due: those that do not fit wait on the Computer's pool, while its loop goes on
    serving MCP (a direct call answers). Once the Server runs again every answer arrives."""
    logs = CallLogs(tmp_path)
    server = server_process()
    computer = start_computer(stack, "c1", server.url, OFFICE, tool_server(env=logs.env))
    count, pad = 200, 60_000  # 12 MB of answers
    agent = join_agent(stack, "a1", server.url, OFFICE, max_concurrent_calls=count)
    calls = [
        agent.submit_tool_call("c1", "sleep", {"seconds": 1.0 + i / 1000, "pad": pad}, timeout=60) for i in range(count)
    ]
    wait_until(lambda: _started_calls(logs) == count, 30, "every call started on the MCP server")
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        time.sleep(2.5)  # every sleep has ended: the Computer has all 200 answers to send
        direct = computer.call_tool("tools__echo", {"text": "loop is free"}, timeout=5)
        assert direct.text == "loop is free"
        assert sum(call.done() for call in calls) < count  # the stall held answers back
    finally:
        os.kill(server.process.pid, signal.SIGCONT)

    answers = [call.result(timeout=60) for call in calls]
    assert [answer.text for answer in answers] == [f"slept {1.0 + i / 1000}" + "." * pad for i in range(count)]
