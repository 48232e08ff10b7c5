"""A client must not reach the Server's lifecycle handlers by naming an event after them,
nor open a second Socket.IO session on its socket (issue 12, class 1).

Before the fix, an event named `disconnect` made the registry forget a session whose
socket stayed in its office room: a ghost that heard the next Agent's notifications. An
event named `connect` (or a second CONNECT packet) made a fresh registry session on the
same socket, free to join a second office while still hearing the first.
"""

from __future__ import annotations

import json

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ErrorCode, SMCPError

from .parts import join_agent, start_server
from .raw_socket import RawSocket

KEY = "reserved-events-key"
OFFICE = "office-x"
OTHER_OFFICE = "office-y"


def _join(raw: RawSocket, role: str, name: str, office_id: str) -> list:
    return raw.emit(events.JOIN_OFFICE, {"role": role, "name": name, "office_id": office_id})


def _members(raw: RawSocket, agent: str, office_id: str) -> list[str]:
    listed = raw.emit(events.LIST_ROOM, {"agent": agent, "req_id": "r", "office_id": office_id})
    return sorted(session["name"] for session in listed[0]["sessions"])


@pytest.fixture
def server(stack):
    return start_server(stack, auth=KEY)


@pytest.fixture
def ghost(stack, server) -> RawSocket:
    raw = RawSocket(server.url, auth={"api_key": KEY})
    stack.callback(raw.close)
    return raw


@pytest.mark.parametrize("name", sorted(events.RESERVED_EVENT_NAMES))
def test_an_event_with_a_reserved_name_is_refused_with_a_code(ghost, name):
    assert _join(ghost, "agent", "ghost", OFFICE) == [True, None]
    payload = {"api_key": KEY} if name == "connect" else {}
    answer = ghost.emit(name, payload)
    error = SMCPError.from_wire(answer[0])
    assert error is not None and error.code == ErrorCode.BAD_REQUEST, answer
    assert repr(name) in error.message and error.details == {"event": name}
    assert _members(ghost, "ghost", OFFICE) == ["ghost"]  # still registered, still answered


def test_a_disconnect_event_does_not_detach_the_session_from_its_office(stack, server, ghost):
    """The issue's reproduction: the ghost stays the office's Agent (a second Agent is
    refused 4101), and once it really disconnects the office is free again."""
    assert _join(ghost, "agent", "ghost", OFFICE) == [True, None]
    ghost.emit("disconnect", {})

    intruder = RawSocket(server.url, auth={"api_key": KEY})
    stack.callback(intruder.close)
    ok, message = _join(intruder, "agent", "second", OFFICE)
    assert ok is False and "already has an agent" in message

    ghost.close()
    agent = join_agent(stack, "second", server.url, OFFICE, auth={"api_key": KEY})
    assert [s.name for s in agent.list_room()] == ["second"]


def test_a_connect_event_cannot_make_a_second_session_on_one_socket(stack, server, ghost):
    """A Computer that re-ran the connect handler could join a second office while its
    socket stayed in the first office's room, hearing both."""
    assert _join(ghost, "computer", "ghost-pc", OFFICE) == [True, None]
    ghost.emit("connect", {"api_key": KEY})
    agent = join_agent(stack, "watcher", server.url, OFFICE, auth={"api_key": KEY})
    assert _join(ghost, "computer", "ghost-pc", OTHER_OFFICE) == [True, None]  # a move: leaves OFFICE

    other = join_agent(stack, "other-agent", server.url, OTHER_OFFICE, auth={"api_key": KEY})
    assert sorted(s.name for s in other.list_room()) == ["ghost-pc", "other-agent"]
    assert [s.name for s in agent.list_room()] == ["watcher"]
    agent.leave_office()  # a notice to OFFICE: the ghost, no longer there, must not hear it
    heard = [(event, payload.get("office_id")) for event, payload in ghost.received(timeout=1.0)]
    assert (events.LEAVE_OFFICE_NOTIFICATION, OFFICE) not in heard
    assert (events.ENTER_OFFICE_NOTIFICATION, OTHER_OFFICE) in heard


def test_a_second_connect_packet_on_one_socket_is_refused(ghost):
    assert _join(ghost, "agent", "ghost", OFFICE) == [True, None]
    answer = ghost.connect_namespace({"api_key": KEY})
    assert answer.startswith(f"44{events.NAMESPACE},"), answer
    refusal = json.loads(answer[len(f"44{events.NAMESPACE},"):])
    assert "already connected" in refusal["message"]
    assert _members(ghost, "ghost", OFFICE) == ["ghost"]  # the first session is intact


def test_binary_packets_are_refused_and_their_attachments_never_held(ghost):
    """A2C-SMCP is JSON only; python-socketio would keep every attachment a packet
    announces until they all arrive: memory the client chooses."""
    assert _join(ghost, "agent", "ghost", OFFICE) == [True, None]
    for _ in range(20):
        answer = ghost.send_packet(f'51000000-{events.NAMESPACE},7["server:list_room",{{"_placeholder":true,"num":0}}]', 7)
        error = SMCPError.from_wire(answer[0])
        assert error is not None and error.code == ErrorCode.BAD_REQUEST and "binary" in error.message
    ghost.send_binary(b"\x00" * 1024)  # a stray attachment: dropped
    assert _members(ghost, "ghost", OFFICE) == ["ghost"]
