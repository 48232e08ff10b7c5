"""Clients that hold what they should not (issue 12, classes 2-4), against `start()`:
sockets that never authenticate, requests sent half-way, too many connections from one
address, an Agent that stops reading. Each test fails on a Server without the bound."""

from __future__ import annotations

import contextlib
import json
import logging

import pytest
import websocket
from server.peers import Peer

from smcp_sync.protocol import events
from smcp_sync.server import ServerLimits

from .hostile import close_all, closed_by_server, engineio_websocket, half_request, joined_websocket
from .parts import start_server, wait_until
from .raw_socket import RawSocket

#: Seconds a test waits for the Server to close what it should (the bounds are ~1 s).
REAPED_WITHIN = 10.0


def test_sockets_that_never_connect_a_namespace_are_closed_after_the_handshake_timeout(stack, caplog):
    caplog.set_level(logging.INFO, logger="smcp_sync.server.transport.engine")
    server = start_server(stack, limits=ServerLimits(handshake_timeout=1.0))
    silent = [engineio_websocket(server.url) for _ in range(3)]
    stack.callback(close_all, silent)
    wrong_key = start_server(stack, auth="the-key", limits=ServerLimits(handshake_timeout=1.0))
    refused = engineio_websocket(wrong_key.url)
    stack.callback(close_all, [refused])
    refused.send(f"40{events.NAMESPACE}," + json.dumps({"api_key": "wrong"}))
    assert refused.recv().startswith(f"44{events.NAMESPACE},")  # CONNECT_ERROR; the socket stays open
    authenticated = RawSocket(server.url, auth={})
    stack.callback(authenticated.close)

    assert all(closed_by_server(ws, REAPED_WITHIN) for ws in [*silent, refused])
    assert sum("handshake_timeout" in r.getMessage() for r in caplog.records) == 4
    # the connection that did connect its namespace in time is still served
    assert authenticated.emit(events.JOIN_OFFICE, {"role": "agent", "name": "a1", "office_id": "o1"}) == [True, None]


@pytest.mark.parametrize("request_start", [b"GET /socket.io/?EIO=4&transport=pol", b"GET / HTTP/1.1\r\nHost: x\r\n"])
def test_requests_sent_half_way_are_cut_after_the_header_timeout(stack, request_start):
    server = start_server(stack, limits=ServerLimits(header_timeout=1.0))
    conns = [half_request(server.url) for _ in range(3)]
    stack.callback(close_all, conns)
    for conn in conns:
        conn.sendall(request_start[len(b"GET /socket.io/?EIO=4&transport=pol"):])  # what else there is of it
    assert all(closed_by_server(conn, REAPED_WITHIN) for conn in conns)


def test_a_kept_alive_connection_that_sends_no_next_request_is_cut(stack):
    server = start_server(stack, limits=ServerLimits(header_timeout=1.0))
    conn = half_request(server.url)
    stack.callback(close_all, [conn])
    conn.sendall(b"ling&EIO=4 HTTP/1.1\r\nHost: x\r\n\r\n")  # a whole (bad) request, answered, kept alive
    assert conn.recv(65536).startswith(b"HTTP/1.1 400")
    assert closed_by_server(conn, REAPED_WITHIN)


def test_one_address_gets_at_most_max_connections_per_ip(stack, caplog):
    server = start_server(stack, limits=ServerLimits(max_connections_per_ip=3))
    hostile = [engineio_websocket(server.url, source="127.0.0.2") for _ in range(3)]
    stack.callback(close_all, hostile)
    with caplog.at_level(logging.WARNING, logger="smcp_sync.server.transport.engine"):
        with pytest.raises(websocket.WebSocketBadStatusException) as refusal:
            engineio_websocket(server.url, source="127.0.0.2")
    assert refusal.value.status_code == 401
    assert "max_connections_per_ip" in caplog.text
    # another address is not affected, and a closed connection frees its place
    legitimate = RawSocket(server.url, auth={})
    stack.callback(legitimate.close)
    hostile.pop().close()
    wait_until(lambda: server.sio._per_address.open_from("127.0.0.2") == 2, what="the closed connection released")
    stack.callback(close_all, [engineio_websocket(server.url, source="127.0.0.2")])


def test_an_agent_that_stops_reading_is_dropped_past_its_send_backlog_and_others_are_served(stack, caplog):
    server = start_server(stack, limits=ServerLimits(max_send_backlog=1024 * 1024))
    big = "x" * (256 * 1024)
    computer = _peer(stack, server.url, "computer", "c1", "o1")
    computer.answer(events.TOOL_CALL, lambda data: {"content": [{"type": "text", "text": big}], "isError": False})
    elsewhere = _peer(stack, server.url, "computer", "c2", "o2")
    elsewhere.answer(events.TOOL_CALL, lambda data: {"content": [], "isError": False})
    other = _peer(stack, server.url, "agent", "a2", "o2")

    careless = joined_websocket(server.url, "agent", "a1", "o1", receive_buffer=16 * 1024)
    stack.callback(close_all, [careless])
    with caplog.at_level(logging.WARNING, logger="smcp_sync.server.transport.engine"):
        for ack_id in range(2, 42):  # 40 answers of 256 KiB: far past the backlog and the kernel's buffers
            careless.send(f"42{events.NAMESPACE},{ack_id}" + json.dumps([events.TOOL_CALL, _call("a1", "c1")]))
        assert other.call(events.TOOL_CALL, _call("a2", "c2")) == {"content": [], "isError": False}
        # dropped without reading a byte (reading would drain the backlog): its office hears it leave
        computer.wait_for(events.LEAVE_OFFICE_NOTIFICATION, timeout=60, agent="a1")
    assert closed_by_server(careless, REAPED_WITHIN)
    assert "max_send_backlog" in caplog.text
    # the careless Agent's place in its office is free, and its Computer answers the next one
    agent = _peer(stack, server.url, "agent", "a3", "o1")
    answer = agent.call(events.TOOL_CALL, _call("a3", "c1"))
    assert len(answer["content"][0]["text"]) == len(big)


@pytest.mark.timeout(120)
def test_answers_a_reader_stops_taking_never_hold_up_the_thread_relaying_them(stack):
    """Short answers are written by the thread that relays them (the Computer's reading
    thread) only while the Agent's socket has room; past that they wait in its queue, and
    that thread goes on serving the Computer (its own request is answered at once). Fails
    when that thread writes whatever the socket's state."""
    server = start_server(stack, limits=ServerLimits(max_send_backlog=64 * 1024 * 1024))  # not dropped during the test
    short = "x" * (32 * 1024)  # under the 64 KiB a thread writes itself
    computer = _peer(stack, server.url, "computer", "c1", "o1")
    answered = []
    computer.answer(events.TOOL_CALL, lambda data: answered.append(1) or {"content": [{"type": "text", "text": short}]})

    careless = joined_websocket(server.url, "agent", "a1", "o1", receive_buffer=16 * 1024)
    stack.callback(close_all, [careless])
    for ack_id in range(2, 302):  # 300 answers of 32 KiB: past the kernel's buffers
        careless.send(f"42{events.NAMESPACE},{ack_id}" + json.dumps([events.TOOL_CALL, _call("a1", "c1")]))
    wait_until(lambda: len(answered) == 300, 30, "the Computer answered every call")
    # on that same thread: the Computer's update, told to the office (the careless Agent too)
    assert computer.call(events.UPDATE_CONFIG, {"computer": "c1"}, timeout=10) is None


def _peer(stack: contextlib.ExitStack, url: str, role: str, name: str, office_id: str) -> Peer:
    peer = Peer(url)
    stack.callback(peer.close)
    assert peer.join(role, name, office_id) == (True, None)
    return peer


def _call(agent: str, computer: str) -> dict:
    return {"agent": agent, "req_id": f"r-{agent}", "computer": computer, "tool_name": "echo", "params": {}, "timeout": 20}
