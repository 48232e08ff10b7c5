"""Faults: an MCP server process killed mid-call, a Computer process killed, the Server
restarted on its port. Each is a real crash of a real process or server."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import psutil
import pytest
from smcp_sync.connection.session import NotConnectedError

from smcp_sync import SMCPServer
from smcp_sync.protocol import ErrorCode, events
from smcp_sync.protocol.errors import NotFoundError

from .parts import (
    CLI,
    CallLogs,
    EventLog,
    Notes,
    free_port,
    join_agent,
    mcp_children,
    start_computer,
    start_server,
    stop,
    tool_server,
    wait_until,
)

OFFICE = "faults"
#: A `sleep` long enough to be cut short; its odd value tells it apart in the call logs.
LONG_SLEEP = 30.5
#: How soon a crash must turn into an answer: far less than any timeout involved.
PROMPT = 5.0


@pytest.mark.timeout(60)
def test_an_mcp_server_killed_mid_call_fails_the_call_promptly_and_its_tools_return(stack, tmp_path):
    logs = CallLogs(tmp_path)
    server = start_server(stack)
    computer = start_computer(stack, "c1", server.url, OFFICE, tool_server(env=logs.env))
    supervision = EventLog()
    computer.add_listener(supervision)
    agent = join_agent(stack, "a1", server.url, OFFICE)

    call = agent.submit_tool_call("c1", "sleep", {"seconds": LONG_SLEEP}, timeout=20)
    logs.wait_started(LONG_SLEEP)
    [victim] = mcp_children()
    victim.kill()
    killed = time.monotonic()

    result = call.result(timeout=20)
    assert time.monotonic() - killed < PROMPT
    assert result.is_error and result.error_code == ErrorCode.TOOL_EXECUTION_FAILED
    assert result.text == "tool 'tools__sleep' failed on MCP server 'tools': connection closed during tools/call 'sleep'"

    # The Computer restarts the MCP server; the Agent's calls work again.
    supervision.wait_for(lambda e: e.kind == "connected" and e.status.generation == 2, timeout=20)
    assert [child.pid for child in mcp_children()] != [victim.pid]
    assert "tools__echo" in {tool.name for tool in agent.get_tools("c1", timeout=10)}
    assert agent.call_tool("c1", "echo", {"text": "back"}, timeout=10).text == "back"


@pytest.mark.timeout(90)
def test_a_killed_computer_process_leaves_the_office_and_calls_to_it_fail_fast(stack, tmp_path):
    logs = CallLogs(tmp_path)
    server = start_server(stack)
    agent = join_agent(stack, "a1", server.url, OFFICE)
    notes = Notes.of_agent(agent)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(tool_server(env=logs.env)))
    process = subprocess.Popen(
        [*CLI, "computer", "--config", str(config), "--url", server.url, "--office", OFFICE, "--name", "c1", "--allow-all-tools"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    stack.callback(stop, process)
    notes.wait_for(events.ENTER_OFFICE_NOTIFICATION, {"office_id": OFFICE, "computer": "c1"}, timeout=30)
    assert agent.call_tool("c1", "echo", {"text": "alive"}, timeout=10).text == "alive"
    in_flight = agent.submit_tool_call("c1", "sleep", {"seconds": LONG_SLEEP}, timeout=20)
    logs.wait_started(LONG_SLEEP)
    [orphan] = mcp_children(psutil.Process(process.pid))
    stack.callback(_kill_if_alive, orphan)

    process.send_signal(signal.SIGKILL)
    killed = time.monotonic()

    with pytest.raises(NotFoundError) as gone:  # the Server fails the forwarded call at once
        in_flight.result(timeout=20)
    assert time.monotonic() - killed < PROMPT
    assert gone.value.code == ErrorCode.NOT_FOUND and "disconnected" in gone.value.message
    notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION, {"office_id": OFFICE, "computer": "c1"})
    asked = time.monotonic()
    with pytest.raises(NotFoundError, match="no computer named 'c1'"):
        agent.call_tool("c1", "echo", {"text": "anyone?"}, timeout=20)
    assert time.monotonic() - asked < 1.0
    wait_until(lambda: "c1" not in agent.tool_cache, what="c1 dropped from the tool cache")
    # The killed Computer's own MCP server sees its stdin close and exits by itself.
    assert psutil.wait_procs([orphan], timeout=10)[1] == []


def _kill_if_alive(process: psutil.Process) -> None:
    try:
        process.kill()
        process.wait(5)
    except psutil.NoSuchProcess:
        pass


@pytest.mark.timeout(60)
def test_after_a_server_restart_on_its_port_everyone_rejoins_by_themselves(stack):
    port = free_port()
    first = stack.enter_context(SMCPServer())
    url = first.start(port=port)
    computer = start_computer(stack, "c1", url, OFFICE, tool_server())
    agent = join_agent(stack, "a1", url, OFFICE)
    assert agent.call_tool("c1", "echo", {"text": "before"}, timeout=10).text == "before"
    in_flight = agent.submit_tool_call("c1", "sleep", {"seconds": LONG_SLEEP}, timeout=20)

    first.stop()
    stopped = time.monotonic()
    with pytest.raises(NotConnectedError):  # a call in flight fails at once, not at its timeout
        in_flight.result(timeout=20)
    assert time.monotonic() - stopped < PROMPT

    second = start_server(stack, port=port)
    assert second.url == url
    everyone = {("agent", "a1"), ("computer", "c1")}
    wait_until(lambda: {(m.role, m.name) for m in second.registry.members(OFFICE)} == everyone, 10, "re-joined")
    assert time.monotonic() - stopped < PROMPT
    assert agent.office_id == OFFICE
    assert agent.call_tool("c1", "echo", {"text": "after"}, timeout=10).text == "after"
    assert "tools__echo" in {tool.name for tool in agent.get_tools("c1", timeout=10)}

    # The Computer still runs the call the Agent lost; the Agent can still stop it.
    agent.cancel_tool_call(in_flight.req_id)
    [stopped] = wait_until(lambda: [r for r in computer.tool_call_history() if r.req_id == in_flight.req_id], 10)
    assert stopped.error_code == ErrorCode.TOOL_EXECUTION_FAILED
