"""`SMCPServer`'s bounds on what one client may hold (`ServerLimits`): refused values name
the option."""

from __future__ import annotations

import pytest

from smcp_sync import SMCPServer
from smcp_sync.server.limits.limits import ServerLimits


@pytest.mark.parametrize(
    "option, value",
    [
        ("handshake_timeout", 0),
        ("handshake_timeout", -1.0),
        ("header_timeout", "10"),
        ("read_timeout", True),
        ("max_connections_per_ip", 0),
        ("max_connections_per_ip", 2.5),
        ("max_send_backlog", None),
        ("max_send_backlog", 0),
        ("max_unauthenticated_bytes", 0),
        ("max_unauthenticated_bytes", None),
        ("max_auth_failures_per_socket", 0),
        ("max_auth_failures_per_ip", 0),
    ],
)
def test_bad_limits_are_refused_naming_the_option(option, value):
    with pytest.raises(ValueError, match=f"^{option} must be"):
        ServerLimits(**{option: value})


def test_limits_reach_the_server_and_none_turns_the_per_address_cap_off():
    server = SMCPServer(limits=ServerLimits(handshake_timeout=2, max_connections_per_ip=None, max_send_backlog=1024))
    assert server.limits == ServerLimits(handshake_timeout=2, max_connections_per_ip=None, max_send_backlog=1024)
    assert server.sio.eio.max_send_backlog == 1024
    assert all(server.sio._per_address.admit("127.0.0.1") for _ in range(1000))


def test_none_turns_the_per_address_auth_backoff_off():
    server = SMCPServer(limits=ServerLimits(max_auth_failures_per_ip=None, max_unauthenticated_bytes=1024))
    assert server.sio.eio.max_unauthenticated_bytes == 1024
    failures = server.sio.auth_failures
    for _ in range(1000):
        failures.refused("127.0.0.1", checked=True, closed=False)
    assert not failures.backed_off("127.0.0.1")
    server.sio.eio.deadlines.shutdown()  # the summary was scheduled on it
