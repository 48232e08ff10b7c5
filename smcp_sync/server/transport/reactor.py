"""One thread that reads every established websocket of the process (`serve(mode="threads")`).

Why: a websocket read by a thread of its own held a gunicorn worker thread for its whole
life, plus Engine.IO's writer thread: ~2 threads per connection, ~4,000 at 1,000 offices,
handing the CPU and the GIL to each other, and at 3,000 offices the Server answered
nothing (benchmarks/README.md, Run Z). Here one thread waits on all of them
(`selectors.DefaultSelector`: epoll on Linux) and, when one is readable, lets its owner
read what is there (`Watched.readable`). A socket that stays silent longer than `silence`
seconds is ended: per-socket deadlines, kept in a heap and checked lazily (each read only
records its time). An owner that cannot take in now without waiting (a writer holds its
websocket) pauses its socket instead, and resumes it from the thread that lets go
(`Reactor.resume`): one stuck connection never holds up the others.

This module knows sockets and callbacks only; what a read means (frames, Engine.IO
packets) is the caller's (`engine.py`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import selectors
import socket
import threading
import time
from typing import Protocol

logger = logging.getLogger(__name__)

#: Seconds `Reactor.stop` waits for the reactor thread to end.
STOP_TIMEOUT = 5.0


class HandedOver(StopIteration):
    """Raised by the WSGI app to gunicorn's worker (a StopIteration: gunicorn ends the
    request on it without an answer) when the request's socket now belongs to the
    reactor: the worker must neither close nor reuse it (`gunicorn_runner`)."""


class Watched(Protocol):
    """What the reactor calls for one socket, always on its thread."""

    def readable(self) -> bool | None:
        """The socket has something to read (data, or its end): take it in without
        blocking. False when the connection is over; None when it cannot be taken in
        without waiting (or what was read is handled on another thread): the socket is
        not watched until `Reactor.resume`."""

    def end(self, silent: bool) -> None:
        """The connection is over (`readable` said so, it was `silent` too long, or the
        reactor stops). Called once, after the socket left the reactor."""


class Reactor:
    """The reactor thread, started by the first socket added and ended by `stop()` (a
    socket added afterwards starts a new one)."""

    def __init__(self, name: str, silence: float) -> None:
        self._name = name
        self._silence = silence
        self._lock = threading.Lock()
        self._loop: _Loop | None = None

    def add(self, sock: socket.socket, watched: Watched) -> None:
        """Read `sock` from now on (from any thread)."""
        with self._lock:
            if self._loop is None or self._loop.stopping:  # stopping on its own: it failed
                self._loop = _Loop(self._name, self._silence)
            self._loop.add(sock, watched)

    def resume(self, sock: socket.socket, over: bool = False) -> None:
        """Watch `sock` again after its `readable` said None (from any thread; nothing if
        it was not paused, or is over); `over`: end it instead (`Watched.end`), as if
        `readable` had said False."""
        with self._lock:
            loop = self._loop
        if loop is not None:
            loop.resume(sock, over)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """End the thread and every connection it reads (`Watched.end`)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop(timeout)


class _Entry:
    __slots__ = ("sock", "watched", "last_read", "ended")

    def __init__(self, sock: socket.socket, watched: Watched, now: float) -> None:
        self.sock = sock
        self.watched = watched
        self.last_read = now
        self.ended = False


class _Loop:
    """One run of the reactor thread: its selector, the pipe that wakes it, its sockets."""

    def __init__(self, name: str, silence: float) -> None:
        self._silence = silence
        self._selector = selectors.DefaultSelector()
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
        self._wake_out.setblocking(False)
        self._selector.register(self._wake_in, selectors.EVENT_READ)
        self._lock = threading.Lock()
        self._added: list[_Entry] = []
        self._resumed: list[tuple[socket.socket, bool]] = []  # (socket, over)
        #: the sockets whose `readable` said None, not watched until resumed
        self._paused: dict[socket.socket, _Entry] = {}
        self._stopping = False
        #: (due, order, entry): when each socket's silence is looked at next
        self._due: list[tuple[float, int, _Entry]] = []
        self._order = itertools.count()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def add(self, sock: socket.socket, watched: Watched) -> None:
        entry = _Entry(sock, watched, time.monotonic())
        with self._lock:
            stopping = self._stopping
            if not stopping:
                self._added.append(entry)
        if stopping:  # a run that ends takes nothing more
            _end(entry, silent=False)
            return
        self._wake()

    def resume(self, sock: socket.socket, over: bool) -> None:
        with self._lock:
            self._resumed.append((sock, over))
        self._wake()

    def stop(self, timeout: float) -> None:
        with self._lock:
            self._stopping = True
        self._wake()
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("the websocket reactor thread still runs after %.1f s", timeout)

    def _wake(self) -> None:
        try:
            self._wake_out.send(b"\0")
        except (BlockingIOError, OSError):  # full (it will wake anyway) or closed (it ended)
            pass

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._serve_once()
        except Exception:
            logger.exception("the websocket reactor failed; its connections are closed")
        finally:
            self._end_all()

    def _serve_once(self) -> None:
        timeout = max(0.0, self._due[0][0] - time.monotonic()) if self._due else None
        ready = self._selector.select(timeout)
        now = time.monotonic()
        for key, _ in ready:
            entry = key.data
            if entry is None:
                self._drain_wake()
                continue
            entry.last_read = now
            try:
                alive = entry.watched.readable()
            except Exception:
                logger.exception("reading a websocket failed; closing it")
                alive = False
            if alive is None:
                self._selector.unregister(entry.sock)
                self._paused[entry.sock] = entry
            elif not alive:
                self._end(entry, silent=False)
        self._take_added(now)
        self._take_resumed()
        self._end_silent(now)

    def _drain_wake(self) -> None:
        try:
            while self._wake_in.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _take_added(self, now: float) -> None:
        with self._lock:
            added, self._added = self._added, []
        for entry in added:
            if self._watch(entry):
                heapq.heappush(self._due, (now + self._silence, next(self._order), entry))

    def _take_resumed(self) -> None:
        with self._lock:
            resumed, self._resumed = self._resumed, []
        for sock, over in resumed:
            entry = self._paused.pop(sock, None)
            if over:
                entry = entry or self._selected(sock)
                if entry is not None:  # else ended already
                    self._end(entry, silent=False)
            elif entry is not None and not entry.ended:  # else not paused (it took the lock after all), or over
                self._watch(entry)

    def _selected(self, sock: socket.socket) -> _Entry | None:
        """The entry of `sock` if it is selected for reading (watched again by a resume
        meant for an earlier pause), else None."""
        try:
            entry: _Entry = self._selector.get_key(sock).data
        except (KeyError, ValueError):
            return None
        return entry

    def _watch(self, entry: _Entry) -> bool:
        """Select `entry`'s socket for reading; False (and the connection ended) when it
        was closed meanwhile."""
        try:
            self._selector.register(entry.sock, selectors.EVENT_READ, entry)
        except (OSError, ValueError, KeyError):
            _end(entry, silent=False)
            return False
        return True

    def _end_silent(self, now: float) -> None:
        while self._due and self._due[0][0] <= now:
            _, _, entry = heapq.heappop(self._due)
            if entry.ended:
                continue
            due = entry.last_read + self._silence
            if due > now:
                heapq.heappush(self._due, (due, next(self._order), entry))
            else:
                self._end(entry, silent=True)

    def _end(self, entry: _Entry, silent: bool) -> None:
        self._paused.pop(entry.sock, None)
        try:
            self._selector.unregister(entry.sock)
        except (KeyError, ValueError, OSError):  # paused, or closed
            pass
        _end(entry, silent)

    def _end_all(self) -> None:
        with self._lock:
            self._stopping = True
            added, self._added = self._added, []
        for key in list(self._selector.get_map().values()):
            if key.data is not None:
                self._end(key.data, silent=False)
        for entry in list(self._paused.values()):
            self._end(entry, silent=False)
        for entry in added:
            _end(entry, silent=False)
        self._due.clear()
        self._selector.close()
        self._wake_in.close()
        self._wake_out.close()


def _end(entry: _Entry, silent: bool) -> None:
    if entry.ended:
        return
    entry.ended = True
    try:
        entry.watched.end(silent)
    except Exception:
        logger.exception("ending a websocket failed")
