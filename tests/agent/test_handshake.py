"""Our clients in the version handshake and with extra HTTP headers: a refused version is
a typed error naming both versions, never retried; what they declare reaches the Server."""

from __future__ import annotations

import functools
import logging
import time

import pytest
from office_parts import joined_agent, serving
from smcp_sync.connection.session import NotConnectedError, ReconnectPolicy

from smcp_sync import Agent, Computer
from smcp_sync.protocol import versioning
from smcp_sync.protocol.errors import AuthError, VersionMismatchError
from smcp_sync.server.transport import handshake

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10.0
FAST_RECONNECT = ReconnectPolicy(delay=0.05, delay_max=0.1, randomization=0.01)


def refusals_logged(caplog) -> int:
    return sum(1 for r in caplog.records if r.name == handshake.__name__ and "refused a connection" in r.getMessage())


@pytest.mark.parametrize("role", ["agent", "computer"])
def test_a_server_of_another_version_refuses_with_a_typed_error_and_no_retry(server, monkeypatch, caplog, role):
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(versioning, "PROTOCOL_VERSION", "0.5.0")  # this client now speaks 0.5
    with (Agent("a1") if role == "agent" else Computer("c1", [])) as client:
        connect = functools.partial(client.connect, server.url) if role == "agent" else functools.partial(client.connect, server.url, "o1")
        with pytest.raises(VersionMismatchError) as refused:
            connect(timeout=TIMEOUT)
    error = refused.value
    assert error.code == 4008 and (error.client_version, error.server_version) == ("0.5.0", "0.4.0")
    assert "0.5.0" in str(error) and "0.4.0" in str(error) and server.url in str(error)
    assert refusals_logged(caplog) == 1


def test_a_strict_server_accepts_our_clients_and_lists_their_version(no_leaks):
    with serving(require_client_version=True) as server, joined_agent("a1", server.url, "o1", timeout=TIMEOUT) as agent:
        (me,) = agent.list_room()
        assert me.a2c_version == versioning.PROTOCOL_VERSION


def test_after_a_drop_a_refused_version_ends_reconnecting(server, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    with joined_agent("a1", server.url, "o1", timeout=TIMEOUT, reconnect=FAST_RECONNECT) as agent:
        # The Server now speaks 0.5: the reconnect after the drop is refused.
        monkeypatch.setattr(handshake, "handshake_refusal", functools.partial(versioning.handshake_refusal, server=versioning.ProtocolVersion(0, 5, 0)))
        server.drop_connections()
        client = agent._connection._sio
        deadline = time.monotonic() + TIMEOUT
        while (refusals_logged(caplog) == 0 or client._reconnect_task is not None and client._reconnect_task.is_alive()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert refusals_logged(caplog) == 1
        assert client._reconnect_task is None or not client._reconnect_task.is_alive()
        assert not agent.connected and agent.office_id is None
        with pytest.raises(NotConnectedError):
            agent.join_office("o1", timeout=1)
    assert any("stops reconnecting" in r.getMessage() and "4008" in r.getMessage() for r in caplog.records)


KEY = "k-\u00e9"


@pytest.mark.parametrize(
    "options",
    [
        {"auth": {"token": KEY}},  # what a2c-smcp 0.4.2 sends
        {"auth": {"access_token": KEY}},
        {"headers": {"Authorization": f"Bearer {KEY}"}},
        {"headers": {"access-token": KEY}},
    ],
    ids=["auth.token", "auth.access_token", "Authorization", "access-token"],
)
def test_our_agent_presents_its_key_in_the_auth_dict_or_a_header(no_leaks, options):
    with serving(auth=KEY) as server, joined_agent("a1", server.url, "o1", timeout=TIMEOUT, **options) as agent:
        assert agent.office_id == "o1"


def test_the_underscore_header_of_official_01x_clients_reaches_the_server(no_leaks):
    """werkzeug drops header names with an underscore; `start()` keeps `access_token`, the
    official 0.1.x clients' default auth (and a wrong key there is still refused)."""
    with serving(auth=KEY) as server:
        with joined_agent("a1", server.url, "o1", timeout=TIMEOUT, headers={"access_token": KEY}) as agent:
            assert agent.office_id == "o1"
        with Agent("a2", headers={"access_token": KEY + "!"}) as agent:
            with pytest.raises(AuthError):
                agent.connect(server.url, timeout=TIMEOUT)


@pytest.mark.parametrize(
    "headers, says",
    [
        ({"bad name": "x"}, "not a valid header name"),
        ({"": "x"}, "not a valid header name"),
        ({"X-Evil": "a\r\nInjected: 1"}, "line breaks"),
        ({"X-Nul": "a\x00b"}, "line breaks"),
        ({"X-Num": 5}, "must be a string"),
        ({7: "x"}, "not a valid header name"),
    ],
)
def test_garbage_headers_are_refused_when_the_client_is_made(headers, says):
    with pytest.raises(ValueError, match=says):
        Agent("a1", headers=headers)
