"""Messages between a worker and its relay: JSON objects over one local socket each way.

Why a `Channel` of our own over a `socket.socket`: each message is one length-prefixed
frame, written with one `sendall` and most often read with one `recv`, and the socket is
whatever `socket.socket` is when it is made, so under gevent (made after patching) every
wait on it yields to the hub instead of blocking it. JSON, never pickle, keeps a message
from running code on the other side. Both ends prove the shared key before anything
else (an HMAC challenge each way, `_prove_both_ways`). Every wait is bounded: a message's
start, and room to send one, by the caller's timeout (`HANDSHAKE_TIMEOUT` unless said),
its rest and the handshake by `HANDSHAKE_TIMEOUT`.

Requests (worker -> relay) are ``{"op": ...}``; answers ``{"ok": value}`` or
``{"error": <flat SMCP error>, "kind": "not_connected"?}``; pushes on a worker's session
socket ``{"push": "notify" | "rejoined" | "rejoin_failed", "seat": [...], ...}``.
"""

from __future__ import annotations

import hmac
import json
import os
import select
import socket
import struct
from multiprocessing import AuthenticationError
from typing import Any

#: Seconds the handshake, and the rest of a message once it has started, may take.
HANDSHAKE_TIMEOUT = 10.0
#: The longest message either end accepts (a Server's own limit is far below it).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_HEADER = struct.Struct("!I")
_NONCE_BYTES = 32
_READ_BYTES = 65536
#: A send to a closed socket raises EPIPE, without SIGPIPE (a host may not ignore it; Linux).
_NO_SIGPIPE = getattr(socket, "MSG_NOSIGNAL", 0)
#: A send that takes what fits and never waits, whatever the socket's timeout (`send_frame_now`).
_NO_WAIT = _NO_SIGPIPE | socket.MSG_DONTWAIT
_DIGEST = "sha256"


class RelayGone(ConnectionError):
    """The other end closed the socket, or stopped answering within the bound. `unread`:
    it closed without reading what we had sent (a reset or a broken pipe), so it acted
    on none of it."""

    def __init__(self, message: str, *, unread: bool = False) -> None:
        super().__init__(message)
        self.unread = unread


class Channel:
    """One connected socket carrying frames (a 4-byte length, then the bytes). Not
    thread-safe: one reader and one writer at a time (`link` and `process` see to it);
    the writer may be another thread than the reader's with `send_frame_now`."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._seconds = sock.gettimeout()
        self._unwaiting: socket.socket | None = None

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._sock.close()
        if self._unwaiting is not None:
            self._unwaiting.close()

    def shut(self) -> None:
        """Shut the socket down both ways: a thread reading it returns, the other end sees the end."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # closed or shut already

    def send_frame(self, data: bytes, timeout: float = HANDSHAKE_TIMEOUT) -> None:
        """Write a frame, waiting for room at most `timeout` seconds (per `sendall`)."""
        self._timeout(timeout)
        if len(data) < _READ_BYTES:
            self._sock.sendall(_HEADER.pack(len(data)) + data, _NO_SIGPIPE)  # one write for the usual message
        else:
            self._sock.sendall(_HEADER.pack(len(data)), _NO_SIGPIPE)
            self._sock.sendall(data, _NO_SIGPIPE)

    def write_from_elsewhere(self) -> None:
        """Let another thread than the reader's write frames while that one waits
        (`send_frame_now`): through a second socket object on a duplicate descriptor,
        never given a timeout, since the reader's may be in timeout mode, where Python
        first polls for room and waits up to the timeout even with MSG_DONTWAIT
        (measured: the whole 2 s of a full buffer's). Called by the reading thread, as
        `close` is, so the two never race."""
        if self._unwaiting is None:
            self._unwaiting = socket.socket(fileno=os.dup(self._sock.fileno()))

    def send_frame_now(self, data: bytes) -> memoryview:
        """Write as much of a frame as the socket takes at once, never waiting: what is
        left of it (empty when all of it went). After `write_from_elsewhere`."""
        frame = memoryview(_HEADER.pack(len(data)) + data)
        assert self._unwaiting is not None, "write_from_elsewhere comes first"
        try:
            sent = self._unwaiting.send(frame, _NO_WAIT)
        except BlockingIOError:
            sent = 0
        return frame[sent:]

    def send_rest(self, rest: memoryview) -> None:
        """Write what `send_frame_now` left, waiting for room at most `HANDSHAKE_TIMEOUT`
        each time (`TimeoutError` past it), without touching the reader's timeout either."""
        assert self._unwaiting is not None, "write_from_elsewhere comes first"
        room = select.poll()
        room.register(self._unwaiting, select.POLLOUT)
        while rest:
            if not room.poll(HANDSHAKE_TIMEOUT * 1000):
                raise TimeoutError(f"the other end read nothing for {HANDSHAKE_TIMEOUT:g}s")
            try:
                rest = rest[self._unwaiting.send(rest, _NO_WAIT) :]
            except BlockingIOError:
                continue

    def receive_frame(self, timeout: float | None, limit: int = MAX_MESSAGE_BYTES) -> bytes:
        """The next frame; waits at most `timeout` seconds for it to start (None: until one
        comes), then at most `HANDSHAKE_TIMEOUT` for each later part of it."""
        if not self._buffer:
            self._timeout(timeout)
            chunk = self._read()
            if len(chunk) >= _HEADER.size and _HEADER.unpack_from(chunk)[0] == len(chunk) - _HEADER.size <= limit:
                return chunk[_HEADER.size :]  # the usual message: one frame, read whole at once
            self._buffer += chunk
        while True:
            if len(self._buffer) >= _HEADER.size:
                (length,) = _HEADER.unpack_from(self._buffer)
                if length > limit:
                    raise ValueError(f"a message of {length} bytes, over the limit of {limit}")
                end = _HEADER.size + length
                if len(self._buffer) >= end:
                    frame = bytes(self._buffer[_HEADER.size : end])
                    del self._buffer[:end]
                    return frame
            self._timeout(HANDSHAKE_TIMEOUT)
            self._buffer += self._read()

    def _read(self) -> bytes:
        chunk = self._sock.recv(_READ_BYTES)
        if not chunk:
            raise EOFError("closed by the other end")
        return chunk

    def _timeout(self, seconds: float | None) -> None:
        """Set the socket's timeout if it changes (each `settimeout` is a system call)."""
        if seconds != self._seconds:
            self._sock.settimeout(seconds)
            self._seconds = seconds


#: One encoder for every message (`json.dumps` with options makes one per call: ~4 µs of
#: ~17 for a usual answer, as `json.loads` of bytes spends ~3 µs guessing their encoding).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode(message: dict[str, Any]) -> bytes:
    return _ENCODER.encode(message).encode("utf-8")


def send(channel: Channel, message: dict[str, Any], timeout: float = HANDSHAKE_TIMEOUT) -> None:
    """Send `message`, waiting for room at most `timeout` seconds (per `sendall`)."""
    try:
        channel.send_frame(encode(message), timeout)
    except (OSError, ValueError) as exc:  # ValueError: closed on our side meanwhile
        raise RelayGone(f"the relay socket is closed ({exc})", unread=_unread(exc)) from None


def receive(channel: Channel, timeout: float | None) -> dict[str, Any]:
    """The next message; waits at most `timeout` seconds for it to start (None: until one
    comes or the socket closes; the rest of it is bounded by `HANDSHAKE_TIMEOUT`)."""
    try:
        data = channel.receive_frame(None if timeout is None else max(0.0, timeout))
    except TimeoutError:
        raise RelayGone(f"no message within {timeout:g}s") from None
    except (EOFError, OSError, ValueError) as exc:
        raise RelayGone(f"the relay socket is closed ({exc or type(exc).__name__})", unread=_unread(exc)) from None
    message = json.loads(data.decode("utf-8"))  # what `encode` wrote
    if not isinstance(message, dict):
        raise RelayGone("a message that is not a JSON object")
    return message


def _unread(exc: BaseException) -> bool:
    return isinstance(exc, (BrokenPipeError, ConnectionResetError))


def dial(path: str, authkey: bytes, timeout: float = HANDSHAKE_TIMEOUT) -> Channel:
    """Connect to the relay at `path` and prove the key both ways. Raises `RelayGone` when
    nothing listens there and `AuthenticationError` when the key is refused."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise RelayGone(f"no relay listens at {path} ({exc.strerror or exc})") from None
    channel = Channel(sock)
    try:
        _prove_both_ways(channel, authkey, challenge_first=False)
    except AuthenticationError:
        channel.close()
        raise
    except (EOFError, OSError, ValueError) as exc:
        channel.close()
        raise RelayGone(f"the relay at {path} closed the connection during the handshake ({exc})") from None
    return channel


def admit(sock: socket.socket, authkey: bytes) -> Channel | None:
    """The relay's side of `dial` on an accepted socket: the Channel once the worker
    has proved the key, or None (the socket closed) when it did not in time."""
    channel = Channel(sock)
    try:
        _prove_both_ways(channel, authkey, challenge_first=True)
    except (AuthenticationError, EOFError, OSError, ValueError):
        channel.close()
        return None
    return channel


def _prove_both_ways(channel: Channel, authkey: bytes, *, challenge_first: bool) -> None:
    """Each end sends a random nonce and checks the other's HMAC of it under the shared
    key; the relay challenges first. `AuthenticationError` if the other end's is wrong."""
    steps = (_challenge, _answer) if challenge_first else (_answer, _challenge)
    for step in steps:
        step(channel, authkey)


def _challenge(channel: Channel, authkey: bytes) -> None:
    nonce = os.urandom(_NONCE_BYTES)
    channel.send_frame(nonce)
    expected = hmac.new(authkey, nonce, _DIGEST).digest()
    if not hmac.compare_digest(channel.receive_frame(HANDSHAKE_TIMEOUT, limit=256), expected):
        channel.send_frame(b"refused")
        raise AuthenticationError("the other end does not have the relay's key")
    channel.send_frame(b"welcome")


def _answer(channel: Channel, authkey: bytes) -> None:
    nonce = channel.receive_frame(HANDSHAKE_TIMEOUT, limit=256)
    channel.send_frame(hmac.new(authkey, nonce, _DIGEST).digest())
    if channel.receive_frame(HANDSHAKE_TIMEOUT, limit=256) != b"welcome":
        raise AuthenticationError("the other end refused this process's key")
