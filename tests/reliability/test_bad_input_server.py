"""Bad input to the Server: generated malformed payloads for every event it handles. Each
gets a coded error (never a 500, never silence, never an echo of a huge value), no thread
dies, nothing is logged as a failure, and the Server keeps serving."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings

from smcp_sync.protocol import events, from_wire
from smcp_sync.protocol.conventions import error_from_ack
from smcp_sync.protocol.errors import BadRequestError
from smcp_sync.protocol.models import ListRoomRet
from smcp_sync.server.handlers.routing import ROUTED_REQUESTS

from .malformed import FUZZ, coded_error, malformed_arguments
from .parts import start_server

try:
    from tests.server.payloads import ALL_REQUESTS, CLIENT_REQUESTS, TWO_VALUE_ACK
    from tests.server.peers import Peer
except ImportError:  # tests/ itself is on sys.path
    from server.payloads import ALL_REQUESTS, CLIENT_REQUESTS, TWO_VALUE_ACK
    from server.peers import Peer

OFFICE = "office-1"  # the office of the valid payloads


def _routed_marker(event: str):
    """The stand-in Computer "c1": says it got the request, and whether it was valid."""

    def answer(payload: Any) -> dict[str, Any]:
        try:
            request = from_wire(ROUTED_REQUESTS[event], payload)
        except BadRequestError as exc:  # the Server must never forward what its model refuses
            return {"routed": event, "invalid": exc.message}
        return {"routed": event, "agent": request.agent, "computer": request.computer}

    return answer


@pytest.fixture
def office(stack):
    """A Server, agent "a1" and a stand-in computer "c1" in office-1, and an unjoined peer."""
    server = start_server(stack)
    peers = {}
    for role, name in (("computer", "c1"), ("agent", "a1"), ("drifter", None)):
        peer = Peer(server.url)
        stack.callback(peer.close)
        if name is not None:
            assert peer.join(role, name, OFFICE) == (True, None)
        peers[role] = peer
    for event in CLIENT_REQUESTS:
        peers["computer"].answer(event, _routed_marker(event))
    return server, peers


def _sender(event: str) -> str:
    if event in TWO_VALUE_ACK:
        return "drifter"  # joins and leaves change the sender: use one nobody relies on
    return "computer" if event in events.UPDATE_TO_NOTIFICATION else "agent"


def _check(event: str, args: tuple[Any, ...], answer: Any, drifter: Peer) -> None:
    if event in TWO_VALUE_ACK:
        ok, message = answer
        if ok is True:
            assert message is None
            if event == events.JOIN_OFFICE:  # it was valid after all: put the peer back
                assert drifter.leave(args[0]["office_id"]) == (True, None)
            return
        assert ok is False and coded_error(error_from_ack(message).to_wire()) is not None
        return
    if coded_error(answer) is not None:
        return
    if event in ROUTED_REQUESTS:  # valid after all, so it reached c1 as a valid request
        assert answer == {"routed": event, "agent": "a1", "computer": "c1"}
    elif event == events.LIST_ROOM:
        assert {s.name for s in from_wire(ListRoomRet, answer).sessions} == {"a1", "c1"}
    else:  # update and cancel events are acknowledged without a value
        assert answer is None


def _fuzz(event: str, sender: Peer, drifter: Peer) -> None:
    @settings(FUZZ, max_examples=50)  # 16 events: half the Computer's count keeps it short
    @given(args=malformed_arguments(ALL_REQUESTS[event]))
    def fuzz(args: tuple[Any, ...]) -> None:
        _check(event, args, sender.call(event, *args, timeout=10), drifter)

    fuzz()


@pytest.mark.timeout(150)
def test_malformed_payloads_of_every_event_get_coded_errors(office, thread_deaths, caplog):
    server, peers = office
    for event in sorted(ALL_REQUESTS):
        _fuzz(event, peers[_sender(event)], peers["drifter"])

    assert thread_deaths == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    # The Server still serves everyone: a routed call, an announcement, a listing.
    assert peers["agent"].call(events.GET_TOOLS, CLIENT_REQUESTS[events.GET_TOOLS]) == {
        "routed": events.GET_TOOLS, "agent": "a1", "computer": "c1"
    }
    assert peers["computer"].call(events.UPDATE_TOOL_LIST, {"computer": "c1"}) is None
    peers["agent"].wait_for(events.UPDATE_TOOL_LIST_NOTIFICATION, computer="c1")
    assert {m.name for m in server.registry.members(OFFICE)} == {"a1", "c1"}

