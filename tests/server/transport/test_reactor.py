"""The reactor (`transport/reactor.py`) on its own, over socket pairs: one thread reads
every socket added, ends each connection once (its end, its silence, the stop), and
leaves no thread or descriptor behind. Served through gunicorn: test_reactor_served.py."""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import psutil
import pytest

from smcp_sync.server.transport.reactor import Reactor, _Loop

#: Seconds a test waits for something the reactor does.
WAIT = 10.0


class Recorder:
    """A `Watched` that reads what comes and records how it ended."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.read = bytearray()
        self.readers: set[str] = set()
        self.ends: list[bool] = []
        self.got = threading.Condition()

    def readable(self) -> bool:
        data = self.sock.recv(4096)
        with self.got:
            self.read += data
            self.readers.add(threading.current_thread().name)
            self.got.notify_all()
        return bool(data)

    def end(self, silent: bool) -> None:
        with self.got:
            self.ends.append(silent)
            self.got.notify_all()
        self.sock.close()

    def wait_for(self, condition) -> None:
        with self.got:
            assert self.got.wait_for(lambda: condition(self), WAIT)


@pytest.fixture
def pairs(no_leaks) -> Iterator[list[tuple[socket.socket, Recorder]]]:
    """Socket pairs: the test's end, and a recorder of the other, which the reactor reads."""
    made: list[tuple[socket.socket, Recorder]] = []
    yield made
    for ours, recorder in made:
        ours.close()
        recorder.sock.close()


def _pair(pairs: list[tuple[socket.socket, Recorder]]) -> tuple[socket.socket, Recorder]:
    ours, theirs = socket.socketpair()
    made = (ours, Recorder(theirs))
    pairs.append(made)
    return made


def test_one_thread_reads_every_socket(pairs):
    reactor = Reactor("test-reactor", silence=60.0)
    before = threading.active_count()
    try:
        for _ in range(50):
            ours, recorder = _pair(pairs)
            reactor.add(recorder.sock, recorder)
        for index, (ours, _) in enumerate(pairs):
            ours.sendall(b"message %d" % index)
        for index, (_, recorder) in enumerate(pairs):
            recorder.wait_for(lambda r, index=index: r.read == b"message %d" % index)
        assert threading.active_count() == before + 1
        assert set().union(*(recorder.readers for _, recorder in pairs)) == {"test-reactor"}
    finally:
        reactor.stop()
    assert threading.active_count() == before


def test_a_connection_that_ends_is_ended_once_and_the_others_read_on(pairs):
    reactor = Reactor("test-reactor", silence=60.0)
    try:
        (closing, gone), (staying, kept) = _pair(pairs), _pair(pairs)
        reactor.add(gone.sock, gone)
        reactor.add(kept.sock, kept)
        closing.close()
        gone.wait_for(lambda r: r.ends == [False])
        staying.sendall(b"still here")
        kept.wait_for(lambda r: r.read == b"still here")
        assert kept.ends == [] and gone.ends == [False]
    finally:
        reactor.stop()
    assert kept.ends == [False]


def test_a_silent_socket_is_ended_as_silent(pairs):
    reactor = Reactor("test-reactor", silence=0.2)
    try:
        _, silent = _pair(pairs)
        reactor.add(silent.sock, silent)
        silent.wait_for(lambda r: r.ends == [True])
    finally:
        reactor.stop()
    assert silent.ends == [True] and silent.read == b""


def test_stop_ends_every_connection_closes_its_descriptors_and_a_later_add_starts_anew(pairs):
    process = psutil.Process()
    descriptors = process.num_fds()
    reactor = Reactor("test-reactor", silence=60.0)
    held = [_pair(pairs) for _ in range(5)]
    for _, recorder in held:
        reactor.add(recorder.sock, recorder)
    reactor.stop()
    assert [recorder.ends for _, recorder in held] == [[False]] * 5
    for ours, _ in held:
        ours.close()
    assert process.num_fds() == descriptors  # the reactor's selector and wake-up pair included
    assert "test-reactor" not in {thread.name for thread in threading.enumerate()}

    ours, later = _pair(pairs)
    reactor.add(later.sock, later)
    try:
        ours.sendall(b"after the stop")
        later.wait_for(lambda r: r.read == b"after the stop")
    finally:
        reactor.stop()


def test_a_watched_that_raises_is_ended_and_the_reactor_goes_on(pairs):
    class Failing(Recorder):
        def readable(self) -> bool:
            raise RuntimeError("a bug in a reader")

    reactor = Reactor("test-reactor", silence=60.0)
    try:
        ours, theirs = socket.socketpair()
        failing = Failing(theirs)
        pairs.append((ours, failing))
        other, kept = _pair(pairs)
        reactor.add(failing.sock, failing)
        reactor.add(kept.sock, kept)
        ours.sendall(b"x")
        failing.wait_for(lambda r: r.ends == [False])
        other.sendall(b"y")
        kept.wait_for(lambda r: r.read == b"y")
    finally:
        reactor.stop()


def test_a_reactor_whose_thread_failed_closes_its_connections_and_starts_anew(pairs, monkeypatch):
    serve_once = _Loop._serve_once
    failed = threading.Event()

    def fail_once(loop: _Loop) -> None:
        if not failed.is_set():
            failed.set()
            raise RuntimeError("the selector failed")
        serve_once(loop)

    monkeypatch.setattr(_Loop, "_serve_once", fail_once)
    reactor = Reactor("test-reactor", silence=60.0)
    try:
        _, first = _pair(pairs)
        reactor.add(first.sock, first)
        first.wait_for(lambda r: r.ends == [False])
        ours, later = _pair(pairs)
        reactor.add(later.sock, later)
        ours.sendall(b"read by a new thread")
        later.wait_for(lambda r: r.read == b"read by a new thread")
    finally:
        reactor.stop()


class Pausing(Recorder):
    """A `Recorder` that cannot take in while `held` is set: it pauses its socket, and
    letting go resumes it (what a websocket does while its writer holds it)."""

    def __init__(self, sock: socket.socket, reactor: Reactor) -> None:
        super().__init__(sock)
        self.reactor = reactor
        self.held = threading.Event()
        self.paused = 0

    def readable(self) -> bool | None:
        if self.held.is_set():
            with self.got:
                self.paused += 1
                self.got.notify_all()
            return None
        return super().readable()

    def let_go(self) -> None:
        self.held.clear()
        self.reactor.resume(self.sock)


def _held(pairs: list[tuple[socket.socket, Recorder]], reactor: Reactor) -> tuple[socket.socket, Pausing]:
    """A pair whose `Pausing` side, held, the reactor reads."""
    ours, recorder = _pair(pairs)
    paused = Pausing(recorder.sock, reactor)
    paused.held.set()
    reactor.add(paused.sock, paused)
    return ours, paused


def test_a_paused_socket_is_not_read_until_resumed_and_the_others_are(pairs):
    reactor = Reactor("test-reactor", silence=60.0)
    try:
        ours, paused = _held(pairs, reactor)
        other_end, other = _pair(pairs)
        reactor.add(other.sock, other)
        ours.sendall(b"waits")
        paused.wait_for(lambda r: r.paused == 1)
        other_end.sendall(b"read on")  # read while the first is paused; the first is not asked again
        other.wait_for(lambda r: r.read == b"read on")
        assert paused.paused == 1 and paused.read == b""
        paused.let_go()
        paused.wait_for(lambda r: r.read == b"waits")
        reactor.resume(paused.sock)  # resuming a socket that is watched: nothing
        ours.sendall(b" and more")
        paused.wait_for(lambda r: r.read == b"waits and more")
        assert paused.ends == []
    finally:
        reactor.stop()
    assert paused.ends == [False] and other.ends == [False]  # the stop ends both, once each


def test_a_socket_paused_at_the_stop_is_ended_too(pairs):
    reactor = Reactor("test-reactor", silence=60.0)
    try:
        ours, paused = _held(pairs, reactor)
        ours.sendall(b"waits")
        paused.wait_for(lambda r: r.paused == 1)
    finally:
        reactor.stop()
    assert paused.ends == [False]
    paused.let_go()  # resumed after the stop: nothing (no reactor runs)
    assert paused.ends == [False]


def test_a_socket_resumed_as_over_is_ended_once_paused_or_watched_again(pairs):
    """`resume(over=True)`: its owner, reading elsewhere, found the connection over; it
    is ended, also when a resume meant for an earlier pause had it watched again."""
    reactor = Reactor("test-reactor", silence=60.0)
    try:
        ours, paused = _held(pairs, reactor)
        ours.sendall(b"waits")
        paused.wait_for(lambda r: r.paused == 1)
        reactor.resume(paused.sock, over=True)
        paused.wait_for(lambda r: r.ends == [False])

        _, watched = _pair(pairs)
        reactor.add(watched.sock, watched)
        reactor.resume(watched.sock, over=True)
        watched.wait_for(lambda r: r.ends == [False])
        reactor.resume(watched.sock, over=True)  # over already: nothing
    finally:
        reactor.stop()
    assert paused.ends == [False] and watched.ends == [False]
