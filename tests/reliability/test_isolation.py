"""Isolation: a randomized multi-office scenario (hypothesis state machine) of Agents and
Computers joining, leaving, switching and disconnecting, checked against a model.

After every step the model knows who is where. Checked: a routed call reaches exactly
the Computer of that name in the caller's office (Computer names repeat across offices,
so a call crossing offices would answer with the wrong badge) or is refused as the
model says; `list_room` shows exactly the caller's office; and every participant,
Agent or Computer, receives exactly the notifications of its own office — as a multiset,
because python-socketio may deliver two back-to-back events in either order.
"""

from __future__ import annotations

import collections
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test
from smcp_sync.connection.session import Connection, ReconnectPolicy

from smcp_sync import Agent, SMCPServer
from smcp_sync.protocol import ErrorCode, events, to_wire
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.models import CallToolResult, SMCPTool, TextContent

from .parts import Note, Notes, note, wait_until

OFFICES = ("north", "south", "east")
AGENT_NAMES = ("ann", "bob", "cy")
#: Computer names repeat on purpose: the same name lives in several offices at once.
COMPUTER_NAMES = ("c1", "c1", "c1", "c2", "c2")
TIMEOUT = 10.0
NO_RECONNECT = ReconnectPolicy(enabled=False)

computer_index = st.integers(0, len(COMPUTER_NAMES) - 1)
agent_index = st.integers(0, len(AGENT_NAMES) - 1)


class BadgeComputer:
    """A Computer (a bare `Connection`) whose every answer carries its unique badge, and
    that records every notification it receives."""

    def __init__(self, badge: str, name: str) -> None:
        self.badge, self.name = badge, name
        self.notes = Notes()
        self.connection = Connection("computer", name, reconnect=NO_RECONNECT)
        self.connection.on(events.GET_TOOLS, self._tools)
        self.connection.on(events.TOOL_CALL, self._call)
        for event in events.NOTIFY_EVENTS:
            self.connection.on(event, lambda payload, event=event: self.notes.record(event, payload))

    def _tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        tool = SMCPTool(name=f"badge-{self.badge}", description="identifies the computer", params_schema={})
        return {"tools": [to_wire(tool)], "req_id": payload["req_id"]}

    def _call(self, payload: dict[str, Any]) -> dict[str, Any]:
        return to_wire(CallToolResult(content=[TextContent(text=self.badge)]))


class Offices(RuleBasedStateMachine):
    """The system under test next to its model: the office of each agent and computer,
    and the notifications each participant must have received."""

    def open_servers(self) -> list[SMCPServer]:
        """The started Servers the participants connect to, in turn: one here; several
        sharing a Redis in tests/scale_out."""
        server = SMCPServer()
        server.start()
        return [server]

    @initialize()
    def start(self) -> None:
        self.servers = self.open_servers()
        self.agents = [Agent(name, reconnect=NO_RECONNECT) for name in AGENT_NAMES]
        self.computers = [BadgeComputer(f"k{i}", name) for i, name in enumerate(COMPUTER_NAMES)]
        self.notes: dict[Any, Notes] = {agent: Notes.of_agent(agent) for agent in self.agents}
        self.notes.update((computer, computer.notes) for computer in self.computers)
        participants = [*self.agents, *self.computers]
        self.home = {p: self.servers[i % len(self.servers)] for i, p in enumerate(participants)}
        for agent in self.agents:
            agent.connect(self.home[agent].url, timeout=TIMEOUT)
        for computer in self.computers:
            computer.connection.connect(self.home[computer].url, timeout=TIMEOUT)
        self.office: dict[Any, str | None] = dict.fromkeys([*self.agents, *self.computers])
        self.expected: dict[Any, collections.Counter[Note]] = {p: collections.Counter() for p in self.office}

    # -- the model ----------------------------------------------------------------------

    def _in(self, office: str | None) -> list[Any]:
        return [p for p, where in self.office.items() if office is not None and where == office]

    def _announce(self, office: str, event: str, payload: dict[str, Any], sender: Any) -> None:
        for participant in self._in(office):
            if participant is not sender:
                self.expected[participant][note(event, payload)] += 1

    def _move(self, participant: Any, role: str, name: str, office: str | None) -> None:
        """Record `participant` leaving its office (if any) and entering `office` (if any)."""
        left = self.office[participant]
        if left is not None:
            self._announce(left, events.LEAVE_OFFICE_NOTIFICATION, {"office_id": left, role: name}, participant)
        self.office[participant] = office
        if office is not None:
            self._announce(office, events.ENTER_OFFICE_NOTIFICATION, {"office_id": office, role: name}, participant)

    def _computer_named(self, name: str, office: str | None) -> BadgeComputer | None:
        return next((p for p in self._in(office) if isinstance(p, BadgeComputer) and p.name == name), None)

    def _received(self, participant: Any) -> collections.Counter[Note]:
        """What `participant` received, once it is at least what the model expects."""
        return self.notes[participant].wait_count(sum(self.expected[participant].values()), TIMEOUT)

    # -- computers ----------------------------------------------------------------------

    @rule(c=computer_index, office=st.sampled_from(OFFICES))
    def computer_joins(self, c: int, office: str) -> None:
        computer = self.computers[c]
        clash = self._computer_named(computer.name, office)
        if clash not in (None, computer):
            with pytest.raises(SMCPError) as refused:
                computer.connection.join_office(office, TIMEOUT)
            assert refused.value.code == ErrorCode.FORBIDDEN
            return
        computer.connection.join_office(office, TIMEOUT)
        if self.office[computer] != office:  # a repeated join changes and announces nothing
            self._move(computer, "computer", computer.name, office)

    @rule(c=computer_index, disconnect=st.booleans())
    def computer_leaves(self, c: int, disconnect: bool) -> None:
        """Leave the office, or disconnect (which counts as leaving) and connect again."""
        computer = self.computers[c]
        if disconnect:
            self._received(computer)  # what is still in flight to it would be lost
            old_sid = computer.connection.sid
            computer.connection.close()
            # The Server handles the disconnect on its own thread, and the session leaves
            # its Socket.IO rooms only after the leave was announced: wait for that, so the
            # next step never races the announcement or the release of the name.
            rooms = self.home[computer].sio.manager.get_rooms
            wait_until(lambda: not rooms(old_sid, events.NAMESPACE), TIMEOUT, "disconnect handled")
            computer.connection.connect(self.home[computer].url, timeout=TIMEOUT)
        else:
            computer.connection.leave_office(TIMEOUT)  # nothing to do when in no office
        self._move(computer, "computer", computer.name, None)

    @rule(c=computer_index)
    def computer_updates_its_tools(self, c: int) -> None:
        computer = self.computers[c]
        office = self.office[computer]
        if office is None:
            with pytest.raises(SMCPError) as refused:
                computer.connection.call(events.UPDATE_TOOL_LIST, {"computer": computer.name}, TIMEOUT)
            assert refused.value.code == ErrorCode.NOT_IN_ROOM
            return
        assert computer.connection.call(events.UPDATE_TOOL_LIST, {"computer": computer.name}, TIMEOUT) is None
        self._announce(office, events.UPDATE_TOOL_LIST_NOTIFICATION, {"computer": computer.name}, computer)

    # -- agents ---------------------------------------------------------------------------

    @rule(a=agent_index, office=st.sampled_from(OFFICES))
    def agent_joins(self, a: int, office: str) -> None:
        agent = self.agents[a]
        current = self.office[agent]
        occupied = any(isinstance(p, Agent) and p is not agent for p in self._in(office))
        if current not in (None, office) or occupied:
            with pytest.raises(SMCPError) as refused:
                agent.join_office(office, TIMEOUT)
            assert refused.value.code == (ErrorCode.FORBIDDEN if current is not None else ErrorCode.ROOM_FULL)
            return
        agent.join_office(office, TIMEOUT)
        if current is None:
            self._move(agent, "agent", agent.name, office)

    @rule(a=agent_index)
    def agent_leaves(self, a: int) -> None:
        agent = self.agents[a]
        agent.leave_office(TIMEOUT)  # nothing to do when in no office
        self._move(agent, "agent", agent.name, None)

    @rule(a=agent_index, name=st.sampled_from(sorted(set(COMPUTER_NAMES))))
    def agent_calls_a_computer_by_name(self, a: int, name: str) -> None:
        agent = self.agents[a]
        office = self.office[agent]
        target = self._computer_named(name, office)
        if target is None:
            with pytest.raises(SMCPError) as refused:
                agent.call_tool(name, "whoami", {}, timeout=TIMEOUT)
            assert refused.value.code == (ErrorCode.NOT_FOUND if office is not None else ErrorCode.NOT_IN_ROOM)
            return
        assert agent.call_tool(name, "whoami", {}, timeout=TIMEOUT).text == target.badge
        assert [tool.name for tool in agent.get_tools(name, timeout=TIMEOUT)] == [f"badge-{target.badge}"]

    @rule(a=agent_index)
    def agent_lists_its_office(self, a: int) -> None:
        agent = self.agents[a]
        office = self.office[agent]
        if office is None:
            with pytest.raises(SMCPError):
                agent.list_room(timeout=TIMEOUT)
            return
        listed = collections.Counter((s.role, s.name, s.office_id) for s in agent.list_room(timeout=TIMEOUT))
        members = [("agent" if isinstance(p, Agent) else "computer", p.name, office) for p in self._in(office)]
        assert listed == collections.Counter(members)

    @rule(a=agent_index, req_id=st.sampled_from(["r1", "r2"]))
    def agent_cancels_a_call(self, a: int, req_id: str) -> None:
        """A cancel fans out to the sender's office only."""
        agent = self.agents[a]
        recipients = [p for p in self._in(self.office[agent]) if p is not agent]
        if not recipients:
            return  # nothing would show when the Server handled it
        agent.cancel_tool_call(req_id)
        cancel = {"agent": agent.name, "req_id": req_id}
        self._announce(self.office[agent], events.CANCEL_TOOL_CALL_NOTIFICATION, cancel, agent)
        # Sent without an answer: wait until it arrived, so that the Server has handled it
        # before the next step changes who is in the office.
        for participant in recipients:
            self._received(participant)

    # -- notifications ----------------------------------------------------------------------

    @rule()
    def check_notifications(self) -> None:
        """Everyone got exactly the notifications of its own office so far."""
        for participant, expected in self.expected.items():
            assert self._received(participant) == expected, participant.name

    def teardown(self) -> None:
        if not hasattr(self, "servers"):
            return
        try:
            self.check_notifications()
        finally:
            for agent in self.agents:
                agent.close()
            for computer in self.computers:
                computer.connection.close()
            for server in self.servers:
                server.stop()


@pytest.mark.timeout(150)
def test_notifications_and_calls_never_cross_an_office(no_leaks):
    run_state_machine_as_test(
        Offices,
        settings=settings(
            max_examples=12,
            stateful_step_count=40,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
