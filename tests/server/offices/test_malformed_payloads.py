"""Malformed payloads for every event: a coded 400 naming the field, and the Server keeps serving."""

from __future__ import annotations

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.conventions import error_from_ack
from smcp_sync.protocol.errors import ErrorCode

from ..payloads import ALL_REQUESTS, TWO_VALUE_ACK

pytestmark = pytest.mark.timeout(60)


def _without(payload: dict, key: str) -> dict:
    return {k: v for k, v in payload.items() if k != key}


def malformed_variants(event: str) -> list[tuple[str, tuple, str]]:
    """(label, arguments, text the error must contain) for `event`."""
    valid = ALL_REQUESTS[event]
    first_field = next(iter(valid))
    return [
        ("no payload", (), "got 0 arguments"),
        ("two payloads", (valid, valid), "got 2 arguments"),
        ("a string", ("hello",), "expected an object, got str"),
        ("a list", ([valid],), "expected an object, got list"),
        ("null", (None,), "expected an object, got NoneType"),
        (f"missing {first_field}", (_without(valid, first_field),), f"required field missing @ $.{first_field}"),
        (f"{first_field} of the wrong type", ({**valid, first_field: 12345},), f"@ $.{first_field}"),
    ]


def error_of(event: str, answer) -> tuple[int, str]:
    if event in TWO_VALUE_ACK:
        ok, message = answer
        assert ok is False
        err = error_from_ack(message)
        return err.code, err.message
    return answer["code"], answer["message"]


@pytest.fixture
def members(office):
    """A joined agent "a1" and a joined computer "c1" (the senders' roles vary by event)."""
    computer = office("computer", "c1")
    computer.answer(events.GET_TOOLS, lambda data: {"tools": [], "req_id": data["req_id"]})
    return {"agent": office("agent", "a1"), "computer": computer}


@pytest.mark.parametrize("event", sorted(ALL_REQUESTS))
def test_malformed_payloads_are_400_naming_the_problem(members, event):
    sender = members["computer" if event.startswith("server:update") else "agent"]
    for label, args, expected in malformed_variants(event):
        code, message = error_of(event, sender.call(event, *args))
        assert (code, expected in message) == (ErrorCode.BAD_REQUEST, True), f"{label}: [{code}] {message}"
    # The Server is unharmed: both sessions still get real answers.
    assert members["computer"].call(events.UPDATE_TOOL_LIST, {"computer": "c1"}) is None
    assert members["agent"].call(events.GET_TOOLS, ALL_REQUESTS[events.GET_TOOLS]) == {"tools": [], "req_id": "r"}


def test_invalid_enum_value_names_the_allowed_values(peer_factory):
    ok, message = peer_factory().join("boss", "x", "office-1")
    assert ok is False and "expected one of 'computer', 'agent' @ $.role" in message


def test_unknown_events_are_answered_404(members):
    answer = members["agent"].call("client:launch_missiles", {"agent": "a1"})
    assert answer == {
        "code": ErrorCode.NOT_FOUND,
        "message": "unknown event 'client:launch_missiles'",
        "details": {"event": "client:launch_missiles"},
    }
    assert members["agent"].call("notify:enter_office", {})["code"] == ErrorCode.NOT_FOUND


def test_a_failing_handler_answers_500_without_internals(server, members, monkeypatch):
    def broken(office_id):
        raise RuntimeError("secret internal detail /etc/passwd")

    monkeypatch.setattr(server.registry, "members", broken)
    answer = members["agent"].call(events.LIST_ROOM, ALL_REQUESTS[events.LIST_ROOM])
    assert answer == {"code": 500, "message": "internal server error while handling server:list_room"}
    monkeypatch.undo()
    assert members["agent"].call(events.LIST_ROOM, ALL_REQUESTS[events.LIST_ROOM])["req_id"] == "r"
