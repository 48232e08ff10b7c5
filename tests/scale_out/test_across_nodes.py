"""Three Server processes sharing one Redis: calls, notifications and office rules hold
whichever node each member is connected to, and a node that dies leaves its offices.

One Redis and three nodes serve the whole module; each test uses offices of its own.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path
from typing import Iterator

import pytest
from computer.helpers import CallLogs, wait_until
from context_end_to_end.helpers import copy_samples, documents_config, windows_config
from office_parts import joined_connection
from reliability.parts import Notes, tool_server
from server.test_cli_server import ServerProcess

from smcp_sync import Agent, Computer
from smcp_sync.computer import allow_all
from smcp_sync.connection.session import Connection, ReconnectPolicy
from smcp_sync.protocol import ErrorCode, events
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.server.limits.limits import SERVE_MODES

from .parts import Node, RedisServer, nodes, redis_server

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 20.0
NO_RECONNECT = ReconnectPolicy(enabled=False)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[RedisServer, list[Node]]]:
    with redis_server() as redis, nodes(redis.url, 3) as started:
        yield redis, started


@contextlib.contextmanager
def agent_at(url: str, office: str, name: str = "agent") -> Iterator[Agent]:
    with Agent(name, reconnect=NO_RECONNECT) as agent:
        agent.connect(url, timeout=TIMEOUT)
        agent.join_office(office, timeout=TIMEOUT)
        yield agent


def computer_at(url: str, office: str, name: str) -> contextlib.AbstractContextManager[Connection]:
    """A bare Computer connection (no MCP servers) that has joined `office`."""
    return joined_connection("computer", name, url, office, timeout=TIMEOUT, reconnect=NO_RECONNECT)


def members(agent: Agent) -> set[tuple[str, str]]:
    return {(s.role, s.name) for s in agent.list_room(timeout=TIMEOUT)}


def test_an_agent_on_one_node_uses_a_computer_on_another(cluster, tmp_path: Path) -> None:
    _, (a, b, _) = cluster
    calls = CallLogs(tmp_path)
    servers = [
        tool_server(env=calls.env),
        windows_config("apps", "--host-id", "com.example.apps", "--interval", "60"),
        documents_config(copy_samples(tmp_path / "documents")),
    ]
    with agent_at(a.url, "calls") as agent:
        notes = Notes.of_agent(agent)
        with Computer("pc", servers, reconnect=NO_RECONNECT, confirm=allow_all) as computer:
            computer.connect(b.url, "calls", timeout=TIMEOUT)
            notes.wait_for(events.ENTER_OFFICE_NOTIFICATION, {"office_id": "calls", "computer": "pc"}, TIMEOUT)
            assert members(agent) == {("agent", "agent"), ("computer", "pc")}

            assert "tools__echo" in [tool.name for tool in agent.get_tools("pc", timeout=TIMEOUT)]
            assert agent.call_tool("pc", "tools__echo", {"text": "across"}, timeout=TIMEOUT).text == "across"
            desktop = agent.get_desktop("pc", timeout=TIMEOUT)
            assert any(window.startswith("window://com.example.apps/") for window in desktop)
            assert agent.get_finder("pc", timeout=TIMEOUT).documents

            # cancel crosses nodes: the notification reaches the Computer on node B
            call = agent.submit_tool_call("pc", "tools__sleep", {"seconds": 60}, timeout=120)
            wait_until(lambda: call.running() or call.done(), TIMEOUT, "call submitted")
            agent.cancel_tool_call(call.req_id)
            assert call.result(timeout=TIMEOUT).is_error

            # a Computer on another node disconnecting fails the pending call at once
            pending = agent.submit_tool_call("pc", "tools__sleep", {"seconds": 61}, timeout=120)
            calls.wait_started(61, TIMEOUT)  # the request is on node B's Computer (and its MCP server)
        with pytest.raises(SMCPError) as gone:
            pending.result(timeout=TIMEOUT)  # far below the call's own 120 s
        assert gone.value.code == ErrorCode.NOT_FOUND
        notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION, {"office_id": "calls", "computer": "pc"}, TIMEOUT)
        assert members(agent) == {("agent", "agent")}


def test_sixteen_agents_race_for_one_office_across_nodes(cluster) -> None:
    _, started = cluster
    with contextlib.ExitStack() as stack:
        agents = []
        for i in range(16):
            agent = stack.enter_context(Agent(f"racer{i}", reconnect=NO_RECONNECT))
            agent.connect(started[i % len(started)].url, timeout=TIMEOUT)
            agents.append(agent)
        outcomes = race([lambda agent=agent: agent.join_office("contested", timeout=TIMEOUT) for agent in agents])
        admitted = [agent for agent, outcome in zip(agents, outcomes) if outcome is None]
        assert len(admitted) == 1
        assert sorted({getattr(o, "code", o) for o in outcomes if o is not None}) == [ErrorCode.ROOM_FULL]
        assert members(admitted[0]) == {("agent", admitted[0].name)}


def test_one_computer_name_per_office_across_nodes(cluster) -> None:
    _, started = cluster
    with contextlib.ExitStack() as stack:
        connections = []
        for i in range(6):
            connection = Connection("computer", "twin", reconnect=NO_RECONNECT)
            stack.callback(connection.close)
            connection.connect(started[i % len(started)].url, timeout=TIMEOUT)
            connections.append(connection)
        outcomes = race([lambda c=c: c.join_office("twins", TIMEOUT) for c in connections])
        assert sum(outcome is None for outcome in outcomes) == 1
        assert {getattr(o, "code", o) for o in outcomes if o is not None} == {ErrorCode.FORBIDDEN}
        agent = stack.enter_context(agent_at(started[0].url, "twins"))
        assert members(agent) == {("agent", "agent"), ("computer", "twin")}


def test_a_computer_moving_offices_across_nodes(cluster) -> None:
    _, (a, b, c) = cluster
    with agent_at(a.url, "from") as first, agent_at(c.url, "to", "second") as second:
        first_notes, second_notes = Notes.of_agent(first), Notes.of_agent(second)
        with computer_at(b.url, "from", "mover") as mover:
            first_notes.wait_for(events.ENTER_OFFICE_NOTIFICATION, {"office_id": "from", "computer": "mover"}, TIMEOUT)
            mover.join_office("to", TIMEOUT)
            first_notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION, {"office_id": "from", "computer": "mover"}, TIMEOUT)
            second_notes.wait_for(events.ENTER_OFFICE_NOTIFICATION, {"office_id": "to", "computer": "mover"}, TIMEOUT)
            assert members(first) == {("agent", "agent")}
            assert members(second) == {("agent", "second"), ("computer", "mover")}
            with pytest.raises(SMCPError) as elsewhere:
                first.call_tool("mover", "anything", {}, timeout=TIMEOUT)
            assert elsewhere.value.code == ErrorCode.NOT_FOUND


def test_a_killed_node_leaves_its_offices_once(cluster) -> None:
    redis, (a, b, _) = cluster
    doomed_node = Node(redis.url)
    try:
        with agent_at(a.url, "fragile") as agent, computer_at(b.url, "fragile", "witness") as witness:
            agent_notes, witness_notes = Notes.of_agent(agent), Notes()
            witness.on(events.LEAVE_OFFICE_NOTIFICATION, lambda p: witness_notes.record(events.LEAVE_OFFICE_NOTIFICATION, p))
            with computer_at(doomed_node.url, "fragile", "doomed"):
                wait_until(lambda: ("computer", "doomed") in members(agent), TIMEOUT, "doomed joined")
                doomed_node.kill()
                leave = {"office_id": "fragile", "computer": "doomed"}
                agent_notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION, leave, TIMEOUT)
                witness_notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION, leave, TIMEOUT)
                assert members(agent) == {("agent", "agent"), ("computer", "witness")}
                threading.Event().wait(3.0)  # two more heartbeats of every survivor: no second announcement
                assert agent_notes.notes.count((events.LEAVE_OFFICE_NOTIFICATION, tuple(sorted(leave.items())))) == 1
                assert len(witness_notes.notes) == 1
    finally:
        doomed_node.stop()


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_smcp_sync_server_with_redis_is_a_node(cluster, tmp_path: Path, mode: str) -> None:
    """`smcp-sync server --redis` under gunicorn, in each mode: its forked worker is a
    node of its own (gevent: its Redis clients on the patched socket module)."""
    redis, (a, _, _) = cluster
    cli_node = ServerProcess("--port", "0", "--redis", redis.url, "--mode", mode)
    try:
        with agent_at(cli_node.url, "cli") as agent:
            calls = CallLogs(tmp_path)
            with Computer("pc", [tool_server(env=calls.env)], reconnect=NO_RECONNECT, confirm=allow_all) as computer:
                computer.connect(a.url, "cli", timeout=TIMEOUT)
                assert members(agent) == {("agent", "agent"), ("computer", "pc")}
                with pytest.raises(SMCPError) as taken:
                    with agent_at(a.url, "cli", "second"):
                        pass
                assert taken.value.code == ErrorCode.ROOM_FULL
                pending = agent.submit_tool_call("pc", "tools__sleep", {"seconds": 60}, timeout=120)
                calls.wait_started(60, TIMEOUT)  # the request is on node A's Computer (and its MCP server)
            with pytest.raises(SMCPError) as gone:  # the worker follows the registry's 'gone' channel
                pending.result(timeout=TIMEOUT)
            assert gone.value.code == ErrorCode.NOT_FOUND
    finally:
        assert cli_node.stop(signal.SIGTERM)[0] == 0


def race(joins: list) -> list:
    """Run every join at once (released together); None for success, else the error."""
    barrier = threading.Barrier(len(joins))
    outcomes: list = [None] * len(joins)

    def run(i: int) -> None:
        barrier.wait(TIMEOUT)
        try:
            joins[i]()
        except SMCPError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(joins))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    return outcomes
