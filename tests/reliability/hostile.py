"""Hostile and careless clients on raw sockets: Engine.IO websockets that never send the
Socket.IO CONNECT, HTTP requests sent half-way, an Agent that stops reading. Each can
come from its own loopback address (127.0.0.0/8 is all loopback on Linux), so a test
can tell the per-address cap's victims from a legitimate client on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import websocket

from smcp_sync.protocol import events

#: Seconds any single socket operation of these clients may block.
IO_TIMEOUT = 10.0


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def tcp_connection(url: str, source: str = "127.0.0.1", receive_buffer: int | None = None) -> socket.socket:
    """A TCP connection to the Server from `source`; a small `receive_buffer` makes a
    client that stops reading hold little in the kernel."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(IO_TIMEOUT)
    sock.bind((source, 0))
    sock.connect(_address(url))
    return sock


def engineio_websocket(url: str, source: str = "127.0.0.1", receive_buffer: int | None = None) -> websocket.WebSocket:
    """An open Engine.IO websocket (open packet read) that has sent no Socket.IO packet.
    Raises `websocket.WebSocketBadStatusException` when the Server refuses it."""
    sock = tcp_connection(url, source, receive_buffer)
    try:
        ws = websocket.create_connection(
            url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket", socket=sock, timeout=IO_TIMEOUT
        )
    except Exception:
        sock.close()
        raise
    assert ws.recv().startswith("0{")
    return ws


def half_request(url: str, source: str = "127.0.0.1") -> socket.socket:
    """A TCP connection that has sent half a request line and then nothing."""
    sock = tcp_connection(url, source)
    sock.sendall(b"GET /socket.io/?EIO=4&transport=pol")
    return sock


def closed_by_server(conn: socket.socket | websocket.WebSocket, within: float) -> bool:
    """Whether the Server closes `conn` within `within` seconds (what it sends first,
    e.g. a close frame, is read and dropped)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = conn.recv(65536) if isinstance(conn, socket.socket) else conn.recv()
        except (socket.timeout, websocket.WebSocketTimeoutException):
            return False
        except (OSError, websocket.WebSocketConnectionClosedException):
            return True
        if not data:
            return True
    return False


def joined_websocket(url: str, role: str, name: str, office_id: str, **options: Any) -> websocket.WebSocket:
    """A websocket that has connected to /smcp (no auth) and joined `office_id`."""
    ws = engineio_websocket(url, **options)
    ws.send(f"40{events.NAMESPACE},{{}}")
    assert ws.recv().startswith(f"40{events.NAMESPACE},")
    join = {"role": role, "name": name, "office_id": office_id}
    ws.send(f"42{events.NAMESPACE},1" + json.dumps([events.JOIN_OFFICE, join]))
    while True:
        frame = ws.recv()
        if frame.startswith(f"43{events.NAMESPACE},1"):
            assert json.loads(frame[len(f"43{events.NAMESPACE},1"):])[0] is True, frame
            return ws


def close_all(conns: list[Any]) -> None:
    """Close without a closing handshake (the Server may have cut them already)."""
    for conn in conns:
        if isinstance(conn, websocket.WebSocket):
            conn.shutdown()
        else:
            conn.close()
