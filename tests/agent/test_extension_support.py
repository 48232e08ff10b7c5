"""smcp_sync extension events against peers that lack them: our Agent is told at once
("not supported by this peer"), never left to time out (protocol/extensions.py)."""

from __future__ import annotations

import pytest
import socketio

from smcp_sync import Agent
from smcp_sync.protocol import extensions
from smcp_sync.protocol.events import COMPLETE, GET_FINDER, NAMESPACE, READ_RESOURCE
from smcp_sync.protocol.extensions import ExtensionNotSupportedError
from smcp_sync.protocol.versioning import PROTOCOL_VERSION

from .raw_server import RawServer

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10.0
#: Far longer than the test's own timeout: an answer must not come from waiting this out.
LONG = 600.0

EXTENSION_CALLS = {
    GET_FINDER: lambda agent: agent.get_finder("c1", timeout=LONG),
    READ_RESOURCE: lambda agent: agent.read_resource("c1", "dpe://docs.example/d1", timeout=LONG),
    COMPLETE: lambda agent: agent.complete("c1", "dpe://docs.example/{doc_ref}", "doc_ref", timeout=LONG),
}


@pytest.fixture
def raw_server(no_leaks):
    """A plain python-socketio Server (joins only, like an official SDK's for our extensions)."""
    raw = RawServer()
    raw.start()
    yield raw
    raw.stop()


@pytest.mark.parametrize("event", sorted(EXTENSION_CALLS))
def test_against_a_server_that_does_not_advertise_them_the_agent_refuses_at_once(raw_server, event):
    with Agent("a1") as agent:
        agent.connect(raw_server.url, timeout=TIMEOUT)
        agent.join_office("o1", timeout=TIMEOUT)
        assert agent._connection.peer_extensions == frozenset()
        with pytest.raises(ExtensionNotSupportedError) as refused:
            EXTENSION_CALLS[event](agent)
    assert refused.value.code == 404
    assert refused.value.details == {"event": event, "peer": "server", "reason": "extension_not_supported"}
    assert "does not support" in refused.value.message and raw_server.url in refused.value.message
    assert raw_server.payloads(event) == []  # never sent


class RawComputer:
    """A bare Socket.IO client joined as a Computer, like an official SDK's; `announce`
    lists the extensions it declares in its connect URL (none: as an official one)."""

    def __init__(self, url: str, announce: str | None = None):
        self.client = socketio.Client(handle_sigint=False, reconnection=False)
        self.received: list[str] = []
        self.client.on(READ_RESOURCE, self._read, namespace=NAMESPACE)
        query = f"?a2c_version={PROTOCOL_VERSION}" + (f"&{extensions.QUERY_KEY}={announce}" if announce else "")
        self.client.connect(url + query, namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=5)
        joined = self.client.call("server:join_office", {"role": "computer", "name": "c1", "office_id": "o1"}, namespace=NAMESPACE, timeout=5)
        assert joined == (True, None)

    def _read(self, payload):
        self.received.append(READ_RESOURCE)
        return {"contents": [{"uri": payload["uri"], "text": "hello"}], "req_id": payload["req_id"]}

    def close(self):
        self.client.disconnect()


@pytest.mark.parametrize("event", sorted(EXTENSION_CALLS))
def test_our_server_refuses_to_route_one_to_a_computer_that_did_not_announce_it(server, event):
    computer = RawComputer(server.url)
    try:
        with Agent("a1") as agent:
            agent.connect(server.url, timeout=TIMEOUT)
            agent.join_office("o1", timeout=TIMEOUT)
            assert agent._connection.peer_extensions == extensions.EXTENSION_REQUESTS
            with pytest.raises(ExtensionNotSupportedError) as refused:
                EXTENSION_CALLS[event](agent)
    finally:
        computer.close()
    assert refused.value.details == {"event": event, "peer": "computer", "reason": "extension_not_supported"}
    assert "computer 'c1'" in refused.value.message
    assert computer.received == []


def test_an_announced_extension_is_routed(server):
    computer = RawComputer(server.url, announce=f"{READ_RESOURCE},client:some_future_extension")
    try:
        with Agent("a1") as agent:
            agent.connect(server.url, timeout=TIMEOUT)
            agent.join_office("o1", timeout=TIMEOUT)
            assert agent.read_resource("c1", "dpe://docs.example/d1", timeout=TIMEOUT) == "hello"
            with pytest.raises(ExtensionNotSupportedError):  # announced one, not the others
                agent.get_finder("c1", timeout=LONG)
    finally:
        computer.close()
    assert computer.received == [READ_RESOURCE]


@pytest.mark.parametrize(
    "packet, advertised",
    [
        ('0{"sid":"x","smcpExtensions":["client:get_finder","client:unknown"]}', {GET_FINDER}),
        ('0{"sid":"x"}', set()),
        ('0{"sid":"x","smcpExtensions":"client:get_finder"}', set()),
        ('0{"sid":"x","smcpExtensions":[1,null,{}]}', set()),
        ("0not json", set()),
        ("0[]", set()),
    ],
)
def test_reading_a_servers_advertisement(packet, advertised):
    assert extensions.from_open_packet(packet) == advertised


def test_reading_a_computers_announcement():
    assert extensions.from_query([f" {GET_FINDER} ,junk", COMPLETE, ""]) == {GET_FINDER, COMPLETE}
    assert extensions.from_query([]) == frozenset()
