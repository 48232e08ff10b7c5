"""Bad input below the payloads: Socket.IO event packets no library would send (JSON that
does not decode, nesting deeper than any decoder allows, event arrays without a string
name, huge event names), written on a bare websocket. Each gets a coded error answer,
no thread dies, and the connection keeps working."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smcp_sync.protocol import events

from .malformed import FUZZ, JSON_VALUES, coded_error
from .parts import start_server
from .raw_socket import RawSocket

OFFICE = "office-1"


def _nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth


#: JSON parts of event packets that no Socket.IO library would send.
BROKEN_BODIES = st.one_of(
    st.sampled_from(["", "[", '["server:list_room",{"agent":', "[]", "{}", '"list_room"', "true", "null", "[null]"]),
    st.text(max_size=30).filter(lambda text: text[:1] not in "0123456789"),  # a leading digit would be the ack id
    st.builds(lambda depth: '["client:tool_call",' + _nested_text(depth) + "]", st.integers(1_000, 100_000)),
    st.builds(_nested_text, st.integers(1_000, 100_000)),
    st.builds(
        lambda name, args: json.dumps([name, *args]),
        JSON_VALUES.filter(lambda value: not isinstance(value, str)),
        st.lists(JSON_VALUES, max_size=2),
    ),
    st.builds(lambda size: json.dumps(["e" * size, {}]), st.integers(1_000, 200_000)),
)


@pytest.mark.timeout(60)
def test_malformed_socketio_packets_get_coded_errors(stack, thread_deaths, caplog):
    server = start_server(stack)
    raw = RawSocket(server.url)
    stack.callback(raw.close)
    join = {"role": "agent", "name": "a1", "office_id": OFFICE}
    assert raw.ask(json.dumps([events.JOIN_OFFICE, join])) == [True, None]

    @FUZZ
    @given(body=BROKEN_BODIES)
    def fuzz(body: str) -> None:
        answer = raw.ask(body)
        assert len(answer) == 1 and coded_error(answer[0]) is not None, f"{answer!r:.200}"

    fuzz()
    assert thread_deaths == []
    assert [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR] == []
    listed = raw.ask(json.dumps([events.LIST_ROOM, {"agent": "a1", "req_id": "r", "office_id": OFFICE}]))
    assert [s["name"] for s in listed[0]["sessions"]] == ["a1"]


#: Packets refused before any handler runs: binary (A2C-SMCP is JSON only) and undecodable.
REFUSED_FORMS = {
    "binary": '51-{ns},{id}["{event}",{{"_placeholder":true,"num":0}}]',
    "undecodable": '2{ns},{id}["{event}",{{"office_id":',
}


@pytest.mark.parametrize("form", sorted(REFUSED_FORMS))
def test_packets_refused_before_any_handler_are_answered_in_the_events_own_shape(server_process, form):
    server = server_process()
    raw = RawSocket(server.url, auth={})
    try:
        for ack_id, event in enumerate([events.JOIN_OFFICE, events.LEAVE_OFFICE, events.TOOL_CALL], start=1):
            packet = REFUSED_FORMS[form].format(ns=events.NAMESPACE, id=ack_id, event=event)
            answer = raw.send_packet(packet, ack_id)
            if event == events.TOOL_CALL:  # client:* events answer the flat error
                error = coded_error(answer[0])
                assert len(answer) == 1 and error is not None and error.code == 400, answer
            else:  # join and leave answer [false, "[code] message"], as for any bad payload
                assert answer[0] is False and answer[1].startswith("[400] malformed event packet"), answer
    finally:
        raw.close()
