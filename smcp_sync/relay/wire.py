"""Messages between a worker and its relay: JSON objects over one local socket each way.

Why JSON and `multiprocessing.connection`: the standard library gives length-prefixed
messages (`send_bytes` / `recv_bytes`) over AF_UNIX and the HMAC challenge both ends
answer with the shared key (`deliver_challenge` / `answer_challenge`); JSON, never
pickle, keeps a message from running code on the other side. Every wait is bounded:
the sockets carry a receive and send timeout (`SO_RCVTIMEO` / `SO_SNDTIMEO`) for the
handshake and for a message once its first byte has come; waits for a message to start
use `poll(timeout)`.

Requests (worker -> relay) are ``{"op": ...}``; answers ``{"ok": value}`` or
``{"error": <flat SMCP error>, "kind": "not_connected"?}``; pushes on a worker's session
socket ``{"push": "notify" | "rejoined" | "rejoin_failed", "seat": [...], ...}``.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

#: Seconds the handshake, and the rest of a message once it has started, may take.
HANDSHAKE_TIMEOUT = 10.0
#: The longest message either end accepts (a Server's own limit is far below it).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class RelayGone(ConnectionError):
    """The other end closed the socket, or stopped answering within the bound. `unread`:
    it closed without reading what we had sent (a reset or a broken pipe), so it acted
    on none of it."""

    def __init__(self, message: str, *, unread: bool = False) -> None:
        super().__init__(message)
        self.unread = unread


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def send(connection: Connection, message: dict[str, Any]) -> None:
    try:
        connection.send_bytes(encode(message))
    except (OSError, ValueError) as exc:  # ValueError: closed on our side meanwhile
        raise RelayGone(f"the relay socket is closed ({exc})", unread=_unread(exc)) from None


def receive(connection: Connection, timeout: float | None) -> dict[str, Any]:
    """The next message; waits at most `timeout` seconds for it to start (None: until one
    comes or the socket closes; the rest of it is bounded by the socket's timeout)."""
    try:
        if not connection.poll(None if timeout is None else max(0.0, timeout)):
            raise RelayGone(f"no message within {timeout:g}s")
        data = connection.recv_bytes(MAX_MESSAGE_BYTES)
    except (EOFError, OSError, ValueError) as exc:
        raise RelayGone(f"the relay socket is closed ({exc or type(exc).__name__})", unread=_unread(exc)) from None
    message = json.loads(data)
    if not isinstance(message, dict):
        raise RelayGone("a message that is not a JSON object")
    return message


def _unread(exc: BaseException) -> bool:
    return isinstance(exc, (BrokenPipeError, ConnectionResetError))


def bound(sock: socket.socket, seconds: float) -> None:
    """Receive and send time out after `seconds` (0: never) on a blocking socket."""
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def dial(path: str, authkey: bytes, timeout: float = HANDSHAKE_TIMEOUT) -> Connection:
    """Connect to the relay at `path` and prove the key both ways. Raises `RelayGone` when
    nothing listens there and `AuthenticationError` when the key is refused."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        bound(sock, timeout)
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise RelayGone(f"no relay listens at {path} ({exc.strerror or exc})") from None
    connection = Connection(sock.detach())
    try:
        answer_challenge(connection, authkey)
        deliver_challenge(connection, authkey)
    except AuthenticationError:
        connection.close()
        raise
    except (EOFError, OSError) as exc:
        connection.close()
        raise RelayGone(f"the relay at {path} closed the connection during the handshake ({exc})") from None
    return connection


def admit(sock: socket.socket, authkey: bytes) -> Connection | None:
    """The relay's side of `dial` on an accepted socket: the Connection once the worker
    has proved the key, or None (the socket closed) when it did not in time."""
    bound(sock, HANDSHAKE_TIMEOUT)
    connection = Connection(sock.detach())
    try:
        deliver_challenge(connection, authkey)
        answer_challenge(connection, authkey)
    except (AuthenticationError, EOFError, OSError):
        connection.close()
        return None
    return connection


def shut(fileno: int) -> None:
    """Shut the socket behind `fileno` down both ways: a thread waiting on it (reading,
    accepting) returns, and the other end sees the end."""
    sock = socket.socket(fileno=os.dup(fileno))
    try:
        sock.shutdown(socket.SHUT_RDWR)
    finally:
        sock.close()
