"""`Relay`: the one process per host that holds the Agent seats its workers share.

Each worker process attaches with one session socket (the relay pushes its
notifications there) and one request socket per thread with a request under way; each
socket has a thread here that reads requests and answers them (`requests.Requests`: a
call is forwarded on its seat's `Connection`, whose answer the thread that receives it
writes back, `worker_socket.WorkerSocket`). A socket that closes ends its worker's part: its
session's seats lose that holder, and a call it was waiting for is cancelled. With no
worker attached for `idle_timeout` seconds the relay leaves its offices and exits; so
does `close()` (SIGTERM under `serve_relay`). docs/ARCHITECTURE.md, The Agent relay.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable

from ..threads.deadlines import Deadlines
from ..threads.serial import SerialThread
from ..threads.thread_stop import join_stopped
from ..threads.worker_pool import WorkerPool
from .place import RelayPlace
from .requests import Requests
from .seat_table import SeatTable
from .wire import HANDSHAKE_TIMEOUT, Channel, RelayGone, admit, receive, send
from .worker_socket import WorkerSocket

logger = logging.getLogger(__name__)

#: Seconds the relay runs on with no worker attached before it exits.
DEFAULT_IDLE_TIMEOUT = 300.0
#: Seconds a seat no worker holds stays in its office.
DEFAULT_SEAT_LINGER = 60.0
#: Seconds `close` gives each seat to leave its office.
SEAT_CLOSE_TIMEOUT = 5.0
_HOUSEKEEPING_INTERVAL = 0.5


class RelayRunning(RuntimeError):
    """Another relay already serves this folder."""


class _Session:
    """One worker process: its push socket, written by a thread of its own (a worker
    that reads slowly holds up only its own notifications)."""

    def __init__(self, token: str, channel: Channel, pid: int) -> None:
        self.token = token
        self.channel = channel
        self.pid = pid
        self.writer = SerialThread(f"smcp-relay-push-{pid}")
        self.writer.start()

    def push(self, message: dict[str, Any]) -> None:
        self.writer.submit(self._write, message)

    def _write(self, message: dict[str, Any]) -> None:
        try:
            send(self.channel, message)
        except RelayGone:
            pass  # its reader sees the socket close and ends the session


class Relay:
    def __init__(
        self,
        place: RelayPlace,
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        seat_linger: float = DEFAULT_SEAT_LINGER,
    ) -> None:
        if idle_timeout <= 0 or seat_linger < 0:
            raise ValueError(f"idle_timeout must be > 0 and seat_linger >= 0, not {idle_timeout} and {seat_linger}")
        self.place = place
        self.idle_timeout = idle_timeout
        self.seat_linger = seat_linger
        self._lock = threading.Condition()
        self._deadlines = Deadlines("smcp-relay-deadlines")  # every seat's requests' expiries
        self._seats = SeatTable(self._push, self._deadlines)
        self._requests = Requests(self._seats, self.status, self._attached)
        self._sessions: dict[str, _Session] = {}
        self._channels: dict[Channel, threading.Thread] = {}
        self._workers: set[WorkerSocket] = set()  # request sockets
        self._idle_since: float | None = time.monotonic()
        self._stopped = threading.Event()
        self._closed = False
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._writers = WorkerPool("smcp-relay-writer", max_workers=8, max_idle=1, idle_timeout=5.0)
        self._authkey = b""

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Take the folder (`RelayRunning` if another relay has it) and listen."""
        self.place.prepare()
        self._authkey = self.place.authkey()
        self._lock_fd = self.place.open_private(self.place.relay_lock)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise RelayRunning(f"a relay already serves {self.place.folder}") from None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = self.place.socket_path
        if os.path.lexists(path):
            os.unlink(path)  # left by a relay that was killed: we hold the relay lock
        previous = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        listener.listen(128)
        self._listener = listener
        for target, name in ((self._accept, "smcp-relay-accept"), (self._housekeep, "smcp-relay-housekeeping")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info("agent relay %d listening at %s", os.getpid(), path)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the relay stops by itself (idle) or is closed; True if it did."""
        return self._stopped.wait(timeout)

    def stop(self) -> None:
        """Have `wait` return (safe in a signal handler); `close` does the rest."""
        self._stopped.set()

    def close(self) -> None:
        """Stop listening, end every worker's sockets, leave every office, stop every thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            seats = self._seats.take_all()
            sessions, self._sessions = list(self._sessions.values()), {}
            channels = dict(self._channels)
            self._lock.notify_all()
        self._stopped.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # the accepting thread returns
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.place.socket_path)
        for channel in channels:
            channel.shut()
        for thread in [*self._threads, *channels.values()]:
            join_stopped(thread, HANDSHAKE_TIMEOUT, "relay thread")
        for session in sessions:
            session.writer.stop(SEAT_CLOSE_TIMEOUT)
        for seat in seats:
            seat.close(SEAT_CLOSE_TIMEOUT)
        self._writers.shutdown(SEAT_CLOSE_TIMEOUT)
        self._deadlines.shutdown(SEAT_CLOSE_TIMEOUT)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # the next relay may start
            self._lock_fd = None
        logger.info("agent relay %d closed (%d seats left their offices)", os.getpid(), len(seats))

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pid": os.getpid(),
                "seats": len(self._seats),
                "sessions": len(self._sessions),
                "sockets": len(self._channels),
                "calls": sum(worker.busy for worker in self._workers),
            }

    # -- threads ---------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                accepted, _ = self._listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._serve, args=(accepted,), name="smcp-relay-worker", daemon=True)
            thread.start()

    def _serve(self, accepted: socket.socket) -> None:
        channel = admit(accepted, self._authkey)
        if channel is None:
            logger.warning("refused a connection that did not prove the relay's key")
            return
        with self._lock:
            if self._closed:
                channel.close()
                return
            self._channels[channel] = threading.current_thread()
            self._idle_since = None
        session: _Session | None = None
        try:
            hello = receive(channel, HANDSHAKE_TIMEOUT)
            token = hello.get("session")
            if not isinstance(token, str) or not token:
                raise RelayGone("a hello without its session")
            if hello.get("role") == "session":
                session = _Session(token, channel, int(hello.get("pid") or 0))
                with self._lock:
                    self._sessions[token] = session
                send(channel, {"ok": {"pid": os.getpid()}})
                receive(channel, None)  # a session socket says nothing more: this returns at its end
            else:
                send(channel, {"ok": {"pid": os.getpid()}})
                self._serve_requests(token, channel)
        except (RelayGone, ValueError):
            pass
        finally:
            self._forget(channel, session)

    def _serve_requests(self, session: str, channel: Channel) -> None:
        """Answer a worker's requests until it closes the socket (`RelayGone`); a call is
        answered by the thread its answer comes on, and this one reads on meanwhile, so
        it sees the worker go and cancels the call."""
        worker = WorkerSocket(channel, self._writers)
        with self._lock:
            self._workers.add(worker)
        try:
            while True:
                message = receive(channel, None)
                if worker.busy:
                    raise RelayGone("a request before the answer to the one under way")
                answer = self._requests.answer(session, worker, message)
                if answer is not None:
                    worker.reply(answer)
        finally:
            with self._lock:
                self._workers.discard(worker)
            worker.hang_up()

    def _forget(self, channel: Channel, session: _Session | None) -> None:
        with self._lock:
            self._channels.pop(channel, None)
            if session is not None and self._sessions.get(session.token) is session:
                del self._sessions[session.token]
            if not self._channels and self._idle_since is None:
                self._idle_since = time.monotonic()
        channel.close()
        if session is not None:
            self._seats.release(session.token)
            session.writer.stop(HANDSHAKE_TIMEOUT)
            logger.info("worker %d detached", session.pid)

    def _housekeep(self) -> None:
        with self._lock:
            while not self._closed:
                self._lock.wait(_HOUSEKEEPING_INTERVAL)
                if self._idle_since is not None and time.monotonic() - self._idle_since >= self.idle_timeout:
                    logger.info("no worker attached for %gs: the relay exits", self.idle_timeout)
                    self._stopped.set()
                    return
                lingered = self._seats.take_unheld(self.seat_linger)
                if lingered:
                    self._lock.release()
                    try:
                        for seat in lingered:
                            logger.info("seat %s of office %s unheld: leaving", seat.key.name, seat.key.office_id)
                            seat.close(SEAT_CLOSE_TIMEOUT)
                    finally:
                        self._lock.acquire()

    def _push(self, session: str, message: dict[str, Any]) -> None:
        with self._lock:
            target = self._sessions.get(session)
        if target is not None:
            target.push(message)

    def _attached(self, session: str) -> bool:
        with self._lock:
            return session in self._sessions


def serve_relay(place: RelayPlace, *, idle_timeout: float, seat_linger: float,
                on_listening: Callable[[], None] | None = None) -> None:
    """Run a relay until it is idle or SIGTERM/SIGINT arrives (the main thread only)."""
    relay = Relay(place, idle_timeout=idle_timeout, seat_linger=seat_linger)
    relay.start()
    previous = {sig: signal.signal(sig, lambda *_: relay.stop()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if on_listening is not None:
            on_listening()
        while not relay.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        relay.close()

