"""server:update_* and server:tool_call_cancel fan out to the sender's office only."""

from __future__ import annotations

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(60)

UPDATES = sorted(events.UPDATE_TO_NOTIFICATION.items())


@pytest.mark.parametrize(("update", "notification"), UPDATES)
def test_update_notifies_the_senders_office_with_the_sessions_name(office, update, notification):
    agent = office("agent", "a1")
    sibling = office("computer", "c2")
    computer = office("computer", "c1")
    outsider = office("agent", "a-out", "office-2")
    # The `computer` field is informative only: the session's joined name is used.
    assert computer.call(update, {"computer": "spoofed"}) is None
    assert agent.wait_for(notification) == {"computer": "c1"}
    assert sibling.wait_for(notification) == {"computer": "c1"}
    assert computer.received(notification) == []
    outsider.assert_quiet()


@pytest.mark.parametrize(("update", "notification"), UPDATES)
def test_update_from_an_agent_is_403(office, update, notification):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    assert agent.call(update, {"computer": "c1"})["code"] == ErrorCode.FORBIDDEN
    computer.assert_quiet()


@pytest.mark.parametrize(("update", "notification"), UPDATES)
def test_update_from_a_computer_outside_any_office_is_4103(office, peer_factory, update, notification):
    agent = office("agent", "a1")
    loner = peer_factory()
    assert loner.call(update, {"computer": "c1"})["code"] == ErrorCode.NOT_IN_ROOM
    agent.assert_quiet()


def test_cancel_is_broadcast_to_the_office(office):
    computer = office("computer", "c1")
    agent = office("agent", "a1")
    outsider = office("computer", "c-out", "office-2")
    assert agent.call(events.CANCEL_TOOL_CALL, {"agent": "a1", "req_id": "req-9"}) is None
    assert computer.wait_for(events.CANCEL_TOOL_CALL_NOTIFICATION) == {"agent": "a1", "req_id": "req-9"}
    assert agent.received() == []
    outsider.assert_quiet()


@pytest.mark.parametrize(
    ("who", "payload", "code"),
    [
        ("agent", {"agent": "other", "req_id": "r"}, ErrorCode.FORBIDDEN),
        ("computer", {"agent": "c1", "req_id": "r"}, ErrorCode.FORBIDDEN),
        ("stranger", {"agent": "a1", "req_id": "r"}, ErrorCode.NOT_IN_ROOM),
    ],
)
def test_cancel_refusals(office, peer_factory, who, payload, code):
    computer = office("computer", "c1")
    peers = {"agent": office("agent", "a1"), "computer": computer, "stranger": peer_factory()}
    computer.wait_for(events.ENTER_OFFICE_NOTIFICATION, agent="a1")
    computer.clear()
    assert peers[who].call(events.CANCEL_TOOL_CALL, payload)["code"] == code
    computer.assert_quiet()
