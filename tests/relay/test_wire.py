"""The relay's wire on real socket pairs: frames of every size arrive whole and in order,
also when written from another thread without waiting, a closed or silent peer and an
oversized frame are `RelayGone`, and the handshake admits the key and refuses another
(wire.py)."""

from __future__ import annotations

import fcntl
import socket
import struct
import tempfile
import termios
import threading
import time
from multiprocessing import AuthenticationError
from pathlib import Path
from typing import Callable, Iterator

import pytest

from smcp_sync.relay.wire import Channel, RelayGone, admit, dial, encode, receive, send

KEY = b"k" * 32


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ends = Channel(left), Channel(right)
    yield ends
    for end in ends:
        end.close()


def test_messages_small_and_large_arrive_whole_and_in_order(pair: tuple[Channel, Channel]) -> None:
    writer, reader = pair
    messages = [{"n": 1}, {"text": "é" * 200_000}, {"n": 3}]  # the large one is read in several parts
    sender = threading.Thread(target=lambda: [send(writer, m) for m in messages])
    sender.start()
    assert [receive(reader, 10) for _ in messages] == messages
    sender.join(10)


def test_frames_read_together_or_in_pieces_come_out_whole() -> None:
    """A read that holds several frames, or a piece of one (its header cut), gives each
    frame whole: the usual read, one whole frame, takes a shorter way (`receive_frame`)."""
    raw, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader = Channel(right)
    try:
        frames = b"".join(len(data).to_bytes(4, "big") + data for data in (encode({"n": n}) for n in range(3)))
        raw.sendall(frames)
        assert [receive(reader, 10) for _ in range(3)] == [{"n": 0}, {"n": 1}, {"n": 2}]
        received: list[dict[str, object]] = []
        later = threading.Thread(target=lambda: received.append(receive(reader, 10)))
        raw.sendall(frames[:2])  # half a header
        later.start()
        assert _until(lambda: _unread(right) == 0)  # the reader took those two bytes alone
        raw.sendall(frames[2:])
        later.join(10)
        assert received == [{"n": 0}] and [receive(reader, 10) for _ in range(2)] == [{"n": 1}, {"n": 2}]
    finally:
        raw.close()
        reader.close()


def _unread(sock: socket.socket) -> int:
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def _until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_closed_peer_a_silent_one_and_an_oversized_frame_are_relay_gone(pair: tuple[Channel, Channel]) -> None:
    writer, reader = pair
    with pytest.raises(RelayGone, match="no message within 0.05s"):
        receive(reader, 0.05)
    writer.send_frame(b"x" * 300)
    with pytest.raises(ValueError, match="a message of 300 bytes, over the limit of 256"):
        reader.receive_frame(1, limit=256)
    writer.close()
    with pytest.raises(RelayGone) as gone:
        send(reader, {"op": "status"})
    assert gone.value.unread  # EPIPE: the peer read none of it


def test_the_handshake_admits_the_key_and_refuses_another() -> None:
    folder = Path(tempfile.mkdtemp(prefix="wire-", dir="/tmp"))
    path = str(folder / "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(2)
    admitted: list[Channel | None] = []

    def accept_two() -> None:
        for _ in range(2):
            accepted, _ = listener.accept()
            admitted.append(admit(accepted, KEY))

    acceptor = threading.Thread(target=accept_two)
    acceptor.start()
    try:
        worker = dial(path, KEY, 5)
        with pytest.raises(AuthenticationError):
            dial(path, b"another key" * 3, 5)
        acceptor.join(10)
        assert admitted[0] is not None and admitted[1] is None
        send(worker, {"op": "hello"})
        assert receive(admitted[0], 5) == {"op": "hello"}
        worker.close()
        admitted[0].close()
    finally:
        listener.close()
        (folder / "s").unlink()
        folder.rmdir()


def test_a_frame_sent_now_never_waits_and_its_rest_follows_whole(pair: tuple[Channel, Channel]) -> None:
    """What the relay's Socket.IO thread writes (`send_frame_now`) takes what fits and
    returns, even with the socket in timeout mode (set by a read under a timeout, as the
    relay's own thread may leave it) and a peer that reads nothing; a writer thread
    then sends the rest (`send_rest`), and the peer gets the frame whole."""
    relay, worker = pair
    relay.write_from_elsewhere()
    with pytest.raises(RelayGone):
        receive(relay, 0.01)  # leaves the socket in timeout mode
    message = {"text": "x" * 1_000_000}  # far more than the socket's buffer
    rest = relay.send_frame_now(encode(message))
    assert 0 < len(rest) < 1_000_000  # a part went, the rest is left: no waiting, no TimeoutError
    writer = threading.Thread(target=relay.send_rest, args=(rest,))
    writer.start()
    assert receive(worker, 10) == message
    writer.join(10)
    assert relay.send_frame_now(encode({"n": 2})) == b""  # a usual answer to a reading worker goes whole
    assert receive(worker, 10) == {"n": 2}
