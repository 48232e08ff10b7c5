"""Closing clients while the Server goes away: nothing keeps running afterwards.

A Server that stops drops every connection; each client decides, on its own thread, to
reconnect. A `close()` at that very moment must still stop everything — the reconnect
task included, or it retries for ever against a Server that is gone.
"""

from __future__ import annotations

import threading

import pytest
from smcp_sync.connection.session import Connection

from .parts import start_server

ROUNDS = 15
CLIENTS = 6


def _reconnecting_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "_handle_reconnect" in t.name]


@pytest.mark.timeout(90)
def test_a_close_racing_the_servers_stop_stops_reconnecting(stack):
    for _ in range(ROUNDS):
        server = start_server(stack)
        connections = [Connection("agent", f"a{i}") for i in range(CLIENTS)]
        for connection in connections:
            stack.callback(connection.close)
            connection.connect(server.url, timeout=10)
        server.stop()  # every client sees its transport drop and decides to reconnect...
        for connection in connections:
            connection.close()  # ...while it is closed
        assert _reconnecting_threads() == []
        assert not any(connection.connected for connection in connections)
