"""The Socket.IO Admin UI (python-socketio's `instrument()`): its `/admin` namespace
answers a real `socketio.Client` with the right login (read-only: no feature that
changes anything; the server's stats every interval) and refuses a wrong one; off by
default; `stop()` undoes the instrumentation."""

from __future__ import annotations

import queue

import engineio.socket
import pytest
import socketio

from smcp_sync.server.observability import AdminUI, Observability

from .peers import Peer

ADMIN = AdminUI("operator", "admin-password")
LOGIN = {"username": "operator", "password": "admin-password"}
T = 10.0


def admin_client(url: str, auth: object) -> tuple[socketio.Client, queue.Queue[tuple[str, object]]]:
    received: queue.Queue[tuple[str, object]] = queue.Queue()
    client = socketio.Client(handle_sigint=False, reconnection=False)
    for event in ("config", "server_stats"):
        client.on(event, lambda data, event=event: received.put((event, data)), namespace="/admin")
    client.connect(url, namespaces=["/admin"], auth=auth, transports=["websocket"], wait_timeout=T)
    return client, received


def next_of(received: queue.Queue[tuple[str, object]], event: str) -> object:
    while True:
        name, data = received.get(timeout=T)
        if name == event:
            return data


def test_the_admin_namespace_answers_the_right_login_read_only(server_factory):
    server = server_factory(observability=Observability(admin=ADMIN))
    peer = Peer(server.url)  # the Server goes on serving /smcp
    assert peer.join("agent", "a1", "o1") == (True, None)
    client, received = admin_client(server.url, LOGIN)
    try:
        assert next_of(received, "config") == {"supportedFeatures": ["AGGREGATED_EVENTS"]}
        stats = next_of(received, "server_stats")
        assert stats["clientsCount"] == 2 and {"name": "/smcp", "socketsCount": 1} in stats["namespaces"]
    finally:
        client.disconnect()
        peer.close()


@pytest.mark.parametrize("auth", [{"username": "operator", "password": "wrong"}, {"username": "other", "password": "admin-password"}, None])
def test_a_wrong_login_is_refused(server_factory, auth):
    server = server_factory(observability=Observability(admin=ADMIN))
    with pytest.raises(socketio.exceptions.ConnectionError):
        admin_client(server.url, auth)


def test_off_by_default(server):
    with pytest.raises(socketio.exceptions.ConnectionError):
        admin_client(server.url, LOGIN)


def test_stop_undoes_the_instrumentation(server_factory):
    handler = engineio.socket.Socket._websocket_handler
    server = server_factory(observability=Observability(admin=ADMIN))
    assert engineio.socket.Socket._websocket_handler is not handler
    server.stop()
    assert engineio.socket.Socket._websocket_handler is handler


def test_one_server_per_process_has_it(server_factory):
    """python-socketio's instrumentation is process-wide and cannot be stacked."""
    first = server_factory(observability=Observability(admin=ADMIN))
    with pytest.raises(RuntimeError, match="another SMCPServer of this process has the Admin UI"):
        server_factory(observability=Observability(admin=ADMIN))
    first.stop()
    server_factory(observability=Observability(admin=ADMIN))  # free again
