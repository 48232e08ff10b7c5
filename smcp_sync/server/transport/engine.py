"""The python-socketio Server the SMCP Server runs on, made stoppable, strict about
malformed packets, and bounded in what one client may hold (`limits.py`).

Engine.IO starts one ping thread (or greenlet) per connection that sleeps
`ping_interval` (25 s) between pings, and closing a polling socket the usual way waits
for the client to fetch its last packet. Here the pings are sent from the one deadline
thread instead (a thread per idle connection was the Server's capacity limit:
benchmarks/README.md, capacity); our `stop()` must end every thread promptly, so sleeps
under way end at shutdown and `drop_all_connections` closes without waiting.
"""

from __future__ import annotations

import itertools
import logging
import queue
import random
import re
import socket
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import parse_qs

import engineio
import simple_websocket
import socketio
from engineio.async_drivers._websocket_wsgi import SimpleWebSocketWSGI
from engineio.exceptions import SocketIsClosedError
from engineio.socket import Socket as EngineIOSocket
from socketio import packet

from ...protocol import events
from ...protocol.errors import AuthError, BadRequestError, ErrorCode, InternalError
from ...protocol.extensions import advertisement
from ...threads.deadlines import Deadline, Deadlines
from ...threads.worker_pool import WorkerPool
from ...threads.write_at_once import WRITE_AT_ONCE_MAX, room_to_write
from ..limits.admission import ConnectionsPerAddress
from ..limits.auth_failures import AuthFailures
from ..limits.limits import DEFAULT_MAX_SEND_BACKLOG, DEFAULT_MAX_UNAUTHENTICATED_BYTES, ServerLimits
from ..limits.request_deadlines import shutdown_socket
from ..limits.send_backlog import BacklogQueue
from ..offices.answers import refusal_for
from ..scale_out.publisher import Publisher
from .in_order import InOrder
from .reactor import HandedOver, Reactor
from .send_failures import SendFailures

logger = logging.getLogger(__name__)


#: Each ping is sent up to this fraction of `ping_interval` early, at random. Clients
#: that connected together (a crowd, a reconnect after a restart) are otherwise pinged
#: together every cycle: each burst of pings and pongs held a request up by several ms
#: at 10,000 connections (benchmarks/README.md, capacity). An early ping is within
#: Engine.IO's rules: a client only waits at most `ping_interval + ping_timeout` for one.
PING_JITTER = 0.1


class StoppableEngineIO(engineio.Server):
    """An Engine.IO server whose sleeps return at `shutdown()`, which drops a client that
    lets more than `max_send_backlog` bytes wait to be sent to it, closes one that sends
    more than `max_unauthenticated_bytes` before it authenticates (`received`), and can
    cut any connection (`cut`) so the worker thread it held is free at once.

    Private parts of engineio used (same shape from engineio 4.9 to 4.15): the per-server
    driver table `_async`, whose `websocket` entry is replaced (for this instance only) by
    `_CuttableWebSocket`, a subclass of the threading driver's `SimpleWebSocketWSGI`
    (`engineio.async_drivers._websocket_wsgi`): engineio keeps a websocket's TCP socket
    nowhere we can reach, and closing an Engine.IO socket leaves the thread reading it
    blocked until the client sends something (a hostile or vanished client never does).
    """

    def __init__(self, *args: Any, max_send_backlog: int = DEFAULT_MAX_SEND_BACKLOG, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stopping = threading.Event()
        self._ended = False
        # whether engineio watches ping timeouts (its service task); untyped there
        self._monitor_clients: bool = getattr(self, "start_service_task")
        self._dropping = False
        self.max_send_backlog = max_send_backlog
        #: Handshake deadlines and drops of overfull clients (never on a sender's thread).
        self.deadlines = Deadlines("smcp-engineio-deadlines")
        self._websockets: dict[str, _CuttableWebSocket] = {}
        #: Engine.IO sessions whose namespace CONNECT was accepted: they may send messages
        #: up to `max_http_buffer_size`; the others `max_unauthenticated_bytes` in all.
        self.authenticated: set[str] = set()
        self.max_unauthenticated_bytes = DEFAULT_MAX_UNAUTHENTICATED_BYTES
        self._unauthenticated_bytes: dict[str, int] = {}
        self._received_lock = threading.Lock()
        #: Sessions being dropped (too much waiting for them, or a send failed): nothing
        #: more is sent to them.
        self._being_dropped: set[str] = set()
        self.send_failures = SendFailures()
        #: Told the size in bytes of each message received, and of each one sent (metrics), when set.
        self.message_received: Callable[[int], None] | None = None
        self.message_sent: Callable[[int], None] | None = None
        self._async: dict[str, Any] = {**self._async, "websocket": _CuttableWebSocket}
        #: Reads every established websocket on one thread, when set (`read_on_one_thread`).
        self.reactor: Reactor | None = None
        #: Where the reactor's sessions run what may wait (`off_the_reactor`), when set.
        self._off_reactor: WorkerPool | None = None
        self._max_websockets = 0

    def read_on_one_thread(self, max_websockets: int) -> None:
        """Read established websockets on one reactor thread (`reactor.py`) instead of
        each on the worker thread of its request, at most `max_websockets` of them (one
        more is closed once open): for a WSGI server that lets go of a request's socket
        on `HandedOver` (gunicorn's gthread worker: `gunicorn_runner`)."""
        self.reactor = Reactor("smcp-websocket-reactor", silence=self.ping_interval + self.ping_timeout)
        self._max_websockets = max_websockets
        self._off_reactor = _off_reactor_pool(max_websockets)

    def off_the_reactor(self, job: Callable[[], None]) -> None:
        """Run `job` (a session's end, or its messages from a namespace CONNECT or
        DISCONNECT on: an `AuthProvider`, disconnect handlers that wait on the office
        registry's Redis) on a small pool, never on the reactor's thread: a Redis or an
        authentication service that hangs holds up the sessions waiting on it, not every
        websocket of the process. Here if the pool is full (every websocket's job queued)."""
        pool = self._off_reactor
        if pool is None or not pool.submit(job):
            job()

    def _room_for_websocket(self, eio_sid: str) -> bool:
        if len(self._websockets) <= self._max_websockets:  # this one included
            return True
        logger.warning(
            "closing Engine.IO connection %s: %d websockets open, more than connections (%d)",
            eio_sid,
            len(self._websockets),
            self._max_websockets,
        )
        return False

    def sleep(self, seconds: float = 0) -> None:
        self._stopping.wait(seconds)

    def start_background_task(self, target: Any, *args: Any, **kwargs: Any) -> Any:
        """Engine.IO's, but a socket's next ping (`Socket._send_ping`, which sleeps
        `ping_interval` then queues a PING) is a deadline, not a thread of its own, up to
        `PING_JITTER` early, and under gevent a websocket's writer runs only while there
        is something to send (`_WriterOnDemand`). A websocket's writer starts once its
        session is on it: what long-polling took before is counted off (`polls_over`)."""
        if getattr(target, "__func__", None) is EngineIOSocket._send_ping and not args and not kwargs:
            sock = target.__self__
            early = self.ping_interval * PING_JITTER * random.random()
            self.deadlines.call_at(time.monotonic() + self.ping_interval - early, lambda: _ping(sock))
            return None
        writer = stock_websocket_writer(target)
        if writer is not None:
            writer[0].queue.polls_over()
            if self.async_mode == "gevent":
                return _WriterOnDemand(self, *writer)
        return super().start_background_task(target, *args, **kwargs)

    def shutdown(self) -> None:
        """End the background threads running now: sleeps under way, the service task,
        the deadline thread, the reactor (closing what it reads). What starts afterwards
        (clients reconnecting after `drop_all_connections`, which leaves the Server
        serving) works as before: sleeps sleep again (a set event made every later ping
        thread ping in a loop, ~2,000 pings a second to each new client), the next
        connection starts the service task, the next deadline its thread, the next
        websocket handed over the reactor; after `end()` sleeps keep ending at once.
        Idempotent (Engine.IO's own shutdown fails when called twice)."""
        self.deadlines.shutdown()
        if self.reactor is not None:
            self.reactor.stop()
        if self._off_reactor is not None:  # the sessions the reactor's stop ended are closed
            pool, self._off_reactor = self._off_reactor, _off_reactor_pool(self._max_websockets)
            pool.shutdown(HANDLER_STOP_TIMEOUT)
        stopping = self._stopping
        if not self._ended:
            self._stopping = threading.Event()
            self.start_service_task = self._monitor_clients
        stopping.set()
        if self.service_task_handle is not None:
            super().shutdown()

    def end(self) -> None:
        """The Server stops for good (`SMCPServer.stop`): a session a connection thread
        still opens during the stop gets no ping thread that sleeps on."""
        self._ended = True
        self.start_service_task = False

    def create_queue(self, *args: Any, **kwargs: Any) -> BacklogQueue:
        """Every Engine.IO socket's outgoing queue (the only queues engineio's server
        makes) counts the bytes waiting in it."""
        return BacklogQueue(*args, **kwargs)

    def drop_all_connections(self) -> None:
        """Close every Engine.IO socket now, without a CLOSE packet and without waiting
        for delivery: clients see a lost transport and reconnect when a server is back.
        Each close runs the Socket.IO disconnect handlers; what they send meanwhile (e.g.
        a 404 for a request whose Computer was dropped first) is not sent: every client
        is losing its connection, and learns that from the transport."""
        self._dropping = True
        try:
            for eio_sid in list(self.sockets):
                self.cut(eio_sid)
        finally:
            self._dropping = False

    def cut(self, eio_sid: str) -> None:
        """Close Engine.IO socket `eio_sid` now (disconnect handlers run, no CLOSE packet)
        and shut its websocket's TCP connection, so the threads serving it return."""
        sock = self.sockets.pop(eio_sid, None)
        if sock is not None:
            sock.close(wait=False, abort=True)  # engineio < 4.11 takes no `reason`; the default is ours
            if isinstance(sock.queue, BacklogQueue):
                sock.queue.discard()
        websocket = self._websockets.pop(eio_sid, None)
        if websocket is not None and websocket.raw is not None:
            shutdown_socket(websocket.raw)

    def send_packet(self, sid: str, pkt: Any) -> None:
        """Engine.IO's, written by this thread when the websocket takes it at once
        (`_CuttableWebSocket.send_at_once`), else queued for the writer. It never raises
        into the emitting thread (python-socketio's emit loop would stop at this
        recipient): a send that fails drops this connection, and each failure is counted
        (`send_failures`). Every message sent passes here (`message_sent`)."""
        if self._dropping or sid in self._being_dropped:
            return
        if _ping_timed_out(self.sockets.get(sid), self.ping_timeout):
            # closed from the deadline thread, not inside this send (as Engine.IO's would):
            # the closing session's leave notice is sent to its office from here, under
            # the sender's locks, while the thread closing an officemate waits on ours
            self._drop_soon(sid)
            return
        if self.message_sent is not None:  # before the write: the client may act on it before this returns
            self.message_sent(_size(pkt.data))
        try:
            websocket = self._websockets.get(sid)
            if websocket is not None and websocket.send_at_once(pkt):
                return
            super().send_packet(sid, pkt)
        except SocketIsClosedError:  # closed since it was looked up: as if it were gone already
            self.send_failures.count_closed()
            return
        except Exception as exc:  # the one guard: the windows known are closed at their causes
            self.send_failures.count_failed()
            # the type only: a message may quote the packet, and that the data sent
            logger.warning("dropping Engine.IO connection %s: a send to it failed (%s)", sid, type(exc).__name__)
            self._drop_soon(sid)
            return
        queue = getattr(self.sockets.get(sid), "queue", None)
        if isinstance(queue, BacklogQueue) and queue.backlog > self.max_send_backlog:
            self._drop_overfull(sid, queue.backlog)

    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        """Engine.IO's, adding our extension list to the OPEN packet of a new session
        (`protocol.extensions`), so an Agent learns what this Server routes before its
        first request. Engine.IO builds that packet inline and queues it just before it
        triggers `connect`, with no hook in between, so it is amended in the queue here
        (it is encoded only when sent, after this returns). Each message is measured
        (`message_received`) here, where every transport hands it on."""
        if event == "connect":
            self._advertise_extensions(args[0])
        elif event == "message" and self.message_received is not None:
            self.message_received(_size(args[1]))
        return super()._trigger_event(event, *args, **kwargs)

    def _advertise_extensions(self, eio_sid: str) -> None:
        outgoing = getattr(self.sockets.get(eio_sid), "queue", None)
        if outgoing is None:
            return
        with outgoing.mutex:  # a `queue.Queue`: its `queue` deque is guarded by `mutex`
            for pkt in outgoing.queue:
                if pkt.packet_type == engineio.packet.OPEN and isinstance(pkt.data, dict):
                    pkt.data.update(advertisement())

    def _drop_overfull(self, sid: str, backlog: int) -> None:
        if sid in self._being_dropped:
            return
        logger.warning(
            "dropping Engine.IO connection %s: %d bytes wait to be sent to it, more than max_send_backlog (%d); "
            "the client is not reading",
            sid,
            backlog,
            self.max_send_backlog,
        )
        self._drop_soon(sid)

    def _drop_soon(self, sid: str) -> None:
        """Stop sending to `sid` and drop it from the deadline thread: the sender may
        hold locks (an office broadcast) that the disconnect handlers take."""
        if sid in self._being_dropped:
            return
        self._being_dropped.add(sid)

        def drop() -> None:
            try:
                self.cut(sid)
            finally:
                self._being_dropped.discard(sid)

        self.deadlines.call_at(0.0, drop)

    def set_authenticated(self, eio_sid: str, authenticated: bool) -> None:
        """Lift the bound on what `eio_sid` sends (its namespace CONNECT was accepted), or
        put it back, counting from zero (it left the namespace)."""
        with self._received_lock:
            self._unauthenticated_bytes.pop(eio_sid, None)
            if authenticated:
                self.authenticated.add(eio_sid)
            else:
                self.authenticated.discard(eio_sid)

    def forget_session(self, eio_sid: str) -> None:
        with self._received_lock:
            self._unauthenticated_bytes.pop(eio_sid, None)
            self.authenticated.discard(eio_sid)

    def received(self, eio_sid: str, size: int) -> bool:
        """Count `size` bytes about to be read from `eio_sid`; False once an
        unauthenticated session is past `max_unauthenticated_bytes` (then it is closed
        unread: engineio would read and decode any message up to
        `max_http_buffer_size`, 16 MiB by default, before any check)."""
        if eio_sid in self.authenticated or eio_sid not in self.sockets:  # gone: nothing of it is kept
            return True
        with self._received_lock:
            total = self._unauthenticated_bytes[eio_sid] = self._unauthenticated_bytes.get(eio_sid, 0) + size
        if total <= self.max_unauthenticated_bytes:
            return True
        logger.info(
            "closing Engine.IO connection %s: it sent more than %d bytes before authenticating (max_unauthenticated_bytes)",
            eio_sid,
            self.max_unauthenticated_bytes,
        )
        return False

    def handle_request(self, environ: dict[str, Any], start_response: Any) -> Any:
        """Engine.IO's, counting a polling POST's length before its body is read
        (`received`)."""
        if environ.get("REQUEST_METHOD") == "POST":
            eio_sid = _query_sid(environ.get("QUERY_STRING", ""))
            if eio_sid is not None and eio_sid in self.sockets and not self.received(eio_sid, _content_length(environ)):
                self.cut(eio_sid)
                start_response("413 Payload Too Large", [("Content-Type", "text/plain"), ("Connection", "close")])
                return [b"too much sent before authentication"]
        return super().handle_request(environ, start_response)

    def _websocket_opened(self, eio_sid: str, websocket: _CuttableWebSocket) -> None:
        self._websockets[eio_sid] = websocket

    def _websocket_closed(self, eio_sid: str) -> None:
        self._websockets.pop(eio_sid, None)


#: The writer `Socket._websocket_handler` starts for a websocket: a loop that waits on
#: the socket's queue for up to `ping_interval + ping_timeout`, sends what it gets on
#: `ws`, and closes `ws` at the end-of-queue marker (None). Its closure holds `self` (the
#: Engine.IO socket) and `ws`. tests/server/test_engineio_parts.py checks this against the
#: installed engineio: tox's `lowest` environment on setup.cfg's floor, the others on the
#: newest release.
_WEBSOCKET_WRITER = "Socket._websocket_handler.<locals>.writer"


def stock_websocket_writer(target: Any) -> tuple[EngineIOSocket, Any] | None:
    """The Engine.IO socket and the websocket of `target` when it is the stock writer
    (`_WEBSOCKET_WRITER`), else None: engineio gives no other way to tell it apart."""
    if getattr(target, "__qualname__", "") != _WEBSOCKET_WRITER:
        return None
    cells = dict(zip(target.__code__.co_freevars, (cell.cell_contents for cell in target.__closure__)))
    return cells["self"], cells["ws"]


class _WriterOnDemand:
    """Engine.IO's websocket writer, as a task started when something is queued and
    ended once the queue is empty: an idle connection has no greenlet waiting on its
    queue (each held ~8 KB: benchmarks/README.md, capacity). What it sends, in what
    order, and when it closes `ws` are the stock writer's; `join()` waits for the close,
    as the handler waits for the stock writer."""

    def __init__(
        self, server: StoppableEngineIO, sock: EngineIOSocket, ws: Any, after_close: Callable[[], None] | None = None
    ) -> None:
        self._server = server
        self._queue: BacklogQueue = sock.queue
        self._ws = ws
        self._after_close = after_close
        self._lock = threading.Lock()
        self._running = False
        self._closed = threading.Event()
        self._queue.on_put = self._wake
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            if self._running or self._closed.is_set():
                return
            self._running = True
        self._server.start_background_task(self._drain)

    def _drain(self) -> None:
        while True:
            try:
                pkt = self._queue.get(block=False)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():  # else: put after the get, its wake saw us running
                        self._running = False
                        return
                continue
            self._queue.task_done()
            try:
                if pkt is None:
                    break
                self._ws.send(pkt.encode())
            except Exception:  # the stock writer ends on any error too
                break
        self._queue.on_put = None
        try:
            self._ws.close()
        finally:
            self._closed.set()
            if self._after_close is not None:
                self._after_close()

    def join(self, timeout: float | None = None) -> None:
        self._closed.wait(timeout)


#: Threads running what may wait of the sessions the reactor reads (their ends, namespace
#: connects and disconnects: `StoppableEngineIO.off_the_reactor`): a few suffice when
#: nothing waits; the rest queue (one job per session at a time: every open websocket
#: may end at once).
OFF_REACTOR_WORKERS = 8


def _off_reactor_pool(max_websockets: int) -> WorkerPool:
    return WorkerPool("smcp-off-reactor", max_workers=OFF_REACTOR_WORKERS, max_queued=max_websockets + 1)


class _FrameLock:
    """The lock a websocket's frames are written and taken in under
    (`_CuttableWebSocket._writing`), which the reactor never waits for: while a writer
    holds it (on a peer that reads nothing, a write waits up to the ping cycle), the
    reactor leaves the socket and the writer, letting go, calls what it left
    (`take_or_call_when_free`): a stuck connection holds up nobody else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = threading.Lock()
        self._when_free: Callable[[], None] | None = None

    def __enter__(self) -> _FrameLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def acquire(self, blocking: bool = True) -> bool:
        return self._lock.acquire(blocking)

    def release(self) -> None:
        self._lock.release()
        with self._state:
            when_free, self._when_free = self._when_free, None
        if when_free is not None:
            when_free()

    def take_or_call_when_free(self, when_free: Callable[[], None]) -> bool:
        """Take the lock if it is free; else False, and whoever holds it calls `when_free`
        once it lets go."""
        if self._lock.acquire(blocking=False):
            return True
        with self._state:
            self._when_free = when_free
        if self._lock.acquire(blocking=False):  # let go meanwhile, maybe before it could see `when_free`
            with self._state:
                self._when_free = None
            return True
        return False


class _ReactorSession:
    """An Engine.IO session on a websocket the reactor reads (`reactor.Watched`): what
    the loop of Engine.IO's websocket handler does with each message read (size check,
    decode, `Socket.receive`: messages, pongs, a CLOSE packet), and what it does after
    the loop (the writer told to end, the session closed). Messages whose handling may
    wait (`_may_wait`), those after them and the session's close run on a small pool, in
    arrival order (`in_order.py`). The descriptor is closed once both the reactor and
    the writer are done with it: closed earlier, its number could go to a new connection
    while one of them still used it."""

    def __init__(
        self, server: StoppableEngineIO, sock: EngineIOSocket, websocket: _CuttableWebSocket, reactor: Reactor
    ) -> None:
        self._server = server
        self._reactor = reactor
        self._socket = sock
        assert websocket.ws is not None and websocket.raw is not None  # handed over after the handshake
        self._ws: _InlineWebSocket = websocket.ws
        self._raw: socket.socket = websocket.raw
        self._users = 2  # the reactor and the writer
        self._users_lock = threading.Lock()
        self._in_order = InOrder(
            self._ws.input_buffer, self._receive, _may_wait, server.off_the_reactor, self._taken_elsewhere, self._close
        )
        _WriterOnDemand(server, sock, websocket, after_close=self._let_go)

    def readable(self) -> bool | None:
        if self._in_order.away:
            return None  # resumed by a writer letting go meanwhile: the pool resumes it
        if not self._ws.take_in_now(self._resume):
            return None  # a writer holds the websocket: read on once it lets go
        taken = self._in_order.take()
        return taken and self._ws.connected

    def _resume(self) -> None:
        self._reactor.resume(self._raw)

    def _taken_elsewhere(self, ok: bool) -> None:
        self._reactor.resume(self._raw, over=not (ok and self._ws.connected))

    def take_buffered(self) -> bool:
        """Handle here the messages read and not handled yet (a client's first messages
        may come in the read that brought its UPGRADE packet, on the request's thread);
        False when the connection is over."""
        return self._in_order.take_all() and self._ws.connected

    def _receive(self, data: Any) -> bool:
        try:
            pkt = _decoded(data, self._server)
            if pkt is not None:
                self._socket.receive(pkt)
        except engineio.exceptions.UnknownPacketError:
            pass
        except SocketIsClosedError:
            return False
        except Exception as exc:  # as the stock loop: the connection ends, the Server goes on
            logger.info("%s: closing the connection on a message it sent (%s)", self._socket.sid, type(exc).__name__)
            return False
        return True

    def end(self, silent: bool) -> None:
        if silent:
            logger.info(
                "%s: closing the connection, nothing heard for %.0f s (ping_interval + ping_timeout)",
                self._socket.sid,
                self._server.ping_interval + self._server.ping_timeout,
            )
            shutdown_socket(self._raw)  # the writer's close frame is not waited for
        self._server._websocket_closed(self._socket.sid)
        self._socket.queue.put(None)  # the writer sends what is queued, then closes the websocket
        self._in_order.end()  # `_close`, after what the pool still handles

    def _close(self) -> None:
        try:
            self._socket.close(wait=False, abort=True, reason=self._server.reason.TRANSPORT_CLOSE)
        finally:
            self._let_go()

    def _let_go(self) -> None:
        with self._users_lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self._raw.close()


#: How the messages whose handling may wait start, as read from a websocket: a Socket.IO
#: CONNECT (its `AuthProvider`) or DISCONNECT, an Engine.IO CLOSE (both run disconnect
#: handlers, which may wait on the office registry's Redis).
_MAY_WAIT = (
    f"{engineio.packet.MESSAGE}{packet.CONNECT}",
    f"{engineio.packet.MESSAGE}{packet.DISCONNECT}",
    f"{engineio.packet.CLOSE}",
)


def _may_wait(data: Any) -> bool:
    """Whether handling `data`, an Engine.IO message read, may wait (`_MAY_WAIT`)."""
    return isinstance(data, str) and data.startswith(_MAY_WAIT)


def _decoded(data: Any, server: StoppableEngineIO) -> engineio.packet.Packet | None:
    """An Engine.IO packet read from a websocket (None at its end), refused past
    `max_http_buffer_size` as Engine.IO's websocket loop does."""
    if data is None:
        return None
    if len(data) > server.max_http_buffer_size:
        raise ValueError("packet is too large")
    return engineio.packet.Packet(encoded_packet=data)


def _ping_timed_out(sock: EngineIOSocket | None, ping_timeout: float) -> bool:
    """Whether `sock` did not answer its last ping within `ping_timeout` (the test of
    `Socket.check_ping_timeout`, which also closes the session)."""
    last_ping = getattr(sock, "last_ping", None)
    return last_ping is not None and last_ping > 0 and time.time() - last_ping > ping_timeout


def _ping(sock: EngineIOSocket) -> None:
    """What `Socket._send_ping` does once its sleep is over."""
    if not sock.closing and not sock.closed:
        sock.last_ping = time.time()
        try:
            sock.send(engineio.packet.Packet(engineio.packet.PING))
        except SocketIsClosedError:  # closed since the check: no ping is due
            pass


def _size(data: Any) -> int:
    """The bytes of an Engine.IO message: a text one as UTF-8 (`isascii` reads a flag
    CPython keeps, so the usual JSON, all ASCII, is not encoded again to be measured)."""
    if isinstance(data, str):
        return len(data) if data.isascii() else len(data.encode())
    return len(data)


def _query_sid(query: str) -> str | None:
    sid = parse_qs(query).get("sid")
    return sid[0] if sid else None


def _content_length(environ: dict[str, Any]) -> int:
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class _CuttableWebSocket(SimpleWebSocketWSGI):
    """engineio's threading websocket, which registers its TCP socket with the server
    (for `StoppableEngineIO.cut`), counts what it reads (`StoppableEngineIO.received`: a
    read past the bound fails, as a lost connection would, before the message is held),
    bounds reads and writes on it by the ping cycle
    (engineio tries to but looks for attributes simple-websocket does not have: a
    vanished peer or a client that stops reading would hold the thread forever), and
    shuts it when closed (the thread reading it then returns; a client that never
    answers the close frame held it). Its websocket reads on the connection's own thread
    (`_InlineWebSocket`), not on a reader thread of its own; or, with a reactor
    (`read_on_one_thread`), on the reactor's, once the request's thread has opened the
    session on it (`_hand_over`) and let go of it."""

    def __init__(self, handler: Any, server: StoppableEngineIO, **kwargs: Any) -> None:
        super().__init__(handler, server, **kwargs)
        self._socket: EngineIOSocket = handler.__self__  # the handler is the Engine.IO socket's bound method
        self._eio_sid = self._socket.sid
        self._server = server
        self.raw: socket.socket | None = None
        #: The websocket once its handshake is done (`__call__`); Engine.IO's session may
        #: be sent to before then (on long-polling, which it is upgrading from).
        self.ws: _InlineWebSocket | None = None
        #: One frame at a time (the writer's, `send_at_once`'s or `close`'s), and never
        #: while the reader is taking in a frame: a close frame changes the websocket's
        #: state, and wsproto refuses to send a message once a close has begun.
        self._writing = _FrameLock()

    def send(self, message: Any) -> None:
        """What Engine.IO's writer calls for each packet it took from the queue."""
        try:
            with self._writing:
                super().send(message)
        finally:
            queue = self._socket.queue
            if isinstance(queue, BacklogQueue):
                queue.sent()

    def send_at_once(self, pkt: Any) -> bool:
        """Write `pkt` on this thread if that cannot wait or reorder: the session is open on
        this websocket, nothing is queued or being written, the message is short and the
        socket has room (`write_at_once`). False: queue it, as Engine.IO does. Saves the
        writer's wake-up per message; a peer that reads nothing still only fills the queue,
        where `max_send_backlog` drops it. A session that began on long-polling is written
        to at once too from its upgrade on (`BacklogQueue.polls_over`). A write that fails
        shuts the socket down and is counted (`send_failures`)."""
        sock, ws, data = self._socket, self.ws, pkt.data
        if ws is None or not sock.upgraded or sock.upgrading or sock.closing or sock.closed:
            return False  # not on this websocket yet, or no longer
        if not isinstance(sock.queue, BacklogQueue):
            return False
        # measured on the data, encoded only once written: a packet queued instead is
        # encoded by the writer (its encoding adds the packet type: `>=` keeps it within)
        if not isinstance(data, (str, bytes)) or len(data) >= WRITE_AT_ONCE_MAX:
            return False
        if not self._writing.acquire(blocking=False):
            return False
        try:
            # `connected` is the reader's view, current under `_writing`: false once a
            # close frame came (Engine.IO's writer then ends the connection)
            if not (ws.connected and sock.queue.idle() and room_to_write(self.raw)):
                return False
            ws.send(pkt.encode())  # a session past its ping timeout is dropped before (`send_packet`)
            return True
        except (OSError, simple_websocket.ConnectionClosed):  # a frame may be cut: end it all
            self._server.send_failures.count_failed()
            if self.raw is not None:
                shutdown_socket(self.raw)  # the reading thread sees the end at once
            return True
        finally:
            self._writing.release()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        key = next((k for k in _RAW_SOCKET_KEYS if k in environ), None)
        if key is None:  # a WSGI server that hands out no raw socket: engineio as it is
            return super().__call__(environ, start_response)
        self.raw = environ[key]
        self.raw.settimeout(self._server.ping_interval + self._server.ping_timeout)
        self._server._websocket_opened(self._eio_sid, self)
        handed_over = False
        try:
            # Kept for as long as the connection is open: engineio's middleware puts an
            # object of a class made for this request in it (for eventlet, ~2 KB).
            environ.pop("eventlet.input", None)
            environ[key] = _CountedSocket(self.raw, self._server, self._eio_sid)
            # SimpleWebSocketWSGI.__call__, on an `_InlineWebSocket`
            self.ws = ws = _InlineWebSocket(environ, self._writing)
            reactor = self._server.reactor
            if reactor is not None and ws.mode == "gunicorn":
                handed_over = self._hand_over(reactor)
                raise HandedOver() if handed_over else StopIteration()
            answer = self.app(self)
            if ws.mode == "gunicorn":
                raise StopIteration()
            if ws.mode == "werkzeug":
                raise ConnectionError()
            return answer
        finally:
            if not handed_over:
                self._server._websocket_closed(self._eio_sid)

    def _hand_over(self, reactor: Reactor) -> bool:
        """What Engine.IO's websocket handler (`Socket._websocket_handler`) does before
        its loop, on this thread (a session on long-polling upgrades: a PING probe, a PONG
        probe, a NOOP that ends the poll, UPGRADE), its writer started on demand
        (`_WriterOnDemand`); then the reactor reads the socket (`_ReactorSession`, the
        loop). False: the upgrade failed (the request ends, as the stock handler's), or
        `read_on_one_thread`'s cap is reached (the session is cut)."""
        sock = self._socket
        if not self._server._room_for_websocket(self._eio_sid):
            self._server.cut(self._eio_sid)
            return False
        if sock.connected:
            sock.upgrading = True  # Engine.IO holds sends meanwhile
            try:
                upgraded = self._upgrade()
            finally:
                sock.upgrading = False
            if not upgraded:
                return False
        else:
            sock.connected = True
        sock.upgraded = True
        sock.queue.polls_over()  # a session upgraded from long-polling is written to as one that began here
        assert self.raw is not None  # set by `__call__`
        session = _ReactorSession(self._server, sock, self, reactor)
        if session.take_buffered():
            reactor.add(self.raw, session)
        else:
            session.end(silent=False)
        return True

    def _upgrade(self) -> bool:
        try:
            probe = _decoded(self.wait(), self._server)
            if probe is None or probe.packet_type != engineio.packet.PING or probe.data != "probe":
                logger.info("%s: failed websocket upgrade, no PING probe", self._eio_sid)
                return False
            self.send(engineio.packet.Packet(engineio.packet.PONG, data="probe").encode())
            self._socket.queue.put(engineio.packet.Packet(engineio.packet.NOOP))  # ends the poll
            upgrade = _decoded(self.wait(), self._server)
        except (OSError, ValueError):
            return False
        if upgrade is None or upgrade.packet_type != engineio.packet.UPGRADE:
            logger.info("%s: failed websocket upgrade, no UPGRADE packet", self._eio_sid)
            return False
        return True

    def close(self) -> None:
        """Send a close frame unless one came or went already, then shut the socket."""
        try:
            with self._writing:  # `connected` is current: a close frame read meanwhile
                super().close()
        except OSError:  # the peer is gone or not reading (send timed out)
            pass
        except simple_websocket.ConnectionClosed:  # the connection ended meanwhile (a read that
            pass  # failed): no close frame to send; Engine.IO's writer calls this as it ends
        if self.raw is not None:
            shutdown_socket(self.raw)


class _NoThread:
    """What simple-websocket starts its reader on: nothing (`_InlineWebSocket`)."""

    name = "smcp-inline-websocket"

    def __init__(self, target: Any) -> None:
        pass

    def start(self) -> None:
        pass


class _NoEvent:
    """What simple-websocket signals its reader's messages with: nobody waits on it."""

    def set(self) -> None:
        pass

    def clear(self) -> None:
        pass


class _HandshakeDone:
    """A wsproto handshake that is over: no events (`WSConnection.events` asks)."""

    def events(self) -> Iterator[Any]:
        return iter(())


class _InlineWebSocket(simple_websocket.Server):
    """simple-websocket's server side (handshake, frames, close and ping replies),
    read by the thread or greenlet that asks for the next message (or by the reactor,
    `take_in_now`) instead of a reader thread of its own: an idle connection holds one
    thread less (benchmarks/README.md, capacity). Engine.IO reads its websocket in one
    loop, so one reader is all it needs.
    Private parts used (simple-websocket 1.0 to 1.1): `_handle_events`, `input_buffer`,
    `connected`.

    What it reads is taken in (wsproto's state, `connected`) under `taking_in`, the lock
    its writers hold: a writer sees a close frame either not yet or fully handled, never
    the state wsproto refuses messages in while `connected` is still true."""

    connected: bool

    def __init__(self, environ: dict[str, Any], taking_in: _FrameLock) -> None:
        self._taking_in = taking_in
        super().__init__(environ, thread_class=_NoThread, event_class=_NoEvent)
        # The handshake is over (or failed: then nothing reads on): wsproto keeps its
        # HTTP parser for the life of the connection (~3 KB), asking it only for events.
        self.ws.handshake = _HandshakeDone()

    def receive(self, timeout: float | None = None) -> Any:
        """The next message; blocks on the socket (its own timeout bounds each read)."""
        while self.connected and not self.input_buffer:
            self.take_in()
        if self.input_buffer:
            return self.input_buffer.pop(0)
        raise simple_websocket.ConnectionClosed(self.close_reason, self.close_message)

    def take_in(self) -> None:
        """Read once from the socket (waiting for data), then take in the frames read:
        complete messages go to `input_buffer`; pings and a close frame are answered;
        `connected` turns false at the connection's end (or a read that fails)."""
        data = self._read()
        if data is not None:
            with self._taking_in:
                self._take(data)

    def take_in_now(self, when_free: Callable[[], None]) -> bool:
        """`take_in` for the reactor, which must never wait: the socket is readable, and
        the lock is taken first or not at all (False: `when_free` is called once the
        writer holding it lets go; nothing was read). What the frames ask to be answered
        (pong, close) is written only if the socket takes it at once: a peer that reads
        nothing gets its connection ended instead."""
        if not self._taking_in.take_or_call_when_free(when_free):
            return False
        sock: _CountedSocket = self.sock
        try:
            data = self._read()
            if data is not None:
                sock.must_not_wait = True
                self._take(data)
        finally:
            sock.must_not_wait = False
            self._taking_in.release()
        return True

    def _read(self) -> bytes | None:
        try:
            data: bytes = self.sock.recv(self.receive_bytes)
        except OSError:
            data = b""
        if not data:
            self.connected = False
            return None
        return data

    def _take(self, data: bytes) -> None:
        try:
            self.ws.receive_data(data)
            self.connected = self._handle_events()
        except (OSError, simple_websocket.ws.LocalProtocolError):
            self.connected = False


#: Where werkzeug and gunicorn put a request's TCP socket in the WSGI environment (the
#: keys simple-websocket looks for).
_RAW_SOCKET_KEYS = ("werkzeug.socket", "gunicorn.socket")


class _CountedSocket:
    """A TCP socket for simple-websocket whose `send` sends all of it (simple-websocket
    ignores the count `socket.send` returns, and with a timeout set that may be part of
    a frame) and whose reads count against the session's bound (`received`): past it a
    read fails like a lost connection, which simple-websocket's reader thread ends on."""

    def __init__(self, sock: socket.socket, server: StoppableEngineIO, eio_sid: str) -> None:
        self._sock = sock
        self._server = server
        self._eio_sid = eio_sid
        self._sending = threading.Lock()
        #: Set while the reactor takes frames in (`_InlineWebSocket.take_in_now`): the
        #: replies they ask for are written only if the socket has room.
        self.must_not_wait = False

    def send(self, data: bytes) -> int:
        """Whole frames, one writer at a time: Engine.IO's writer and the reader's
        replies (pong, close) both send, and a partial `sendall` of one would interleave
        with the other's (under gevent, a second greenlet waiting to write a socket
        raises)."""
        if self.must_not_wait and not room_to_write(self._sock):
            raise BlockingIOError("the peer reads nothing: a reply to it would wait")
        with self._sending:
            self._sock.sendall(data)
        return len(data)

    def recv(self, size: int) -> bytes:
        data = self._sock.recv(size)
        if not self._server.received(self._eio_sid, len(data)):
            shutdown_socket(self._sock)
            raise ConnectionAbortedError("sent too much before authenticating")
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


#: Seconds after which a handshake deadline that passed during the session's CONNECT
#: looks at the session again.
_CONNECT_RECHECK = 0.5

#: Seconds `SocketIOServer.shutdown` waits for event handlers still running.
HANDLER_STOP_TIMEOUT = 5.0
#: How long a node's Redis listener may take to subscribe before the node serves anyway
#: (`StoppableRedisManager.initialize`), and how often it probes meanwhile.
LISTEN_TIMEOUT = 5.0
PROBE_INTERVAL = 0.1


class SocketIOServer(socketio.Server):
    """`socketio.Server` on a `StoppableEngineIO` (via the hook python-socketio provides
    for choosing the Engine.IO server class), answering malformed packets.

    python-socketio leaves an event packet whose JSON does not decode (invalid, or nested
    deeper than the decoder's recursion limit) unanswered, logged as an error, and runs an
    event array without a string name into a handler thread that dies on it. The caller
    then waits out its timeout. Here such a packet gets a 400 answer when it asked for one
    (it carries an ack id), and a warning in our log.
    """

    eio: StoppableEngineIO

    def __init__(self, *args: Any, limits: ServerLimits = ServerLimits(), **kwargs: Any) -> None:
        super().__init__(*args, max_send_backlog=limits.max_send_backlog, **kwargs)
        self.eio.max_unauthenticated_bytes = limits.max_unauthenticated_bytes
        self._handler_pool = WorkerPool("smcp-server-worker")
        self._inline_events: set[str] = set()
        self._handshake_timeout = limits.handshake_timeout
        self._per_address = ConnectionsPerAddress(limits.max_connections_per_ip)
        self._max_auth_failures = limits.max_auth_failures_per_socket
        self.auth_failures = AuthFailures(limits.max_auth_failures_per_ip, self.eio.deadlines.call_at)
        self._admitted: dict[str, _Admitted] = {}
        #: Sessions whose namespace CONNECT is being handled: their handshake deadline waits.
        self._connecting: set[str] = set()
        self._handshakes = threading.Lock()
        #: Told the event name of each event answered 500 busy (metrics), when set.
        self.refused_busy: Callable[[str], None] | None = None

    def _engineio_server_class(self) -> type[engineio.Server]:
        return StoppableEngineIO

    def handle_inline(self, events: Iterable[str]) -> None:
        """Run the handlers of `events` on the thread that received them. Only for handlers
        that never block (e.g. they answer with a `Future`): a connection's messages are
        read by that thread, one after the other."""
        self._inline_events |= set(events)

    def start_background_task(self, target: Any, *args: Any, **kwargs: Any) -> Any:
        """Event handlers run on reused threads (python-socketio starts a new thread per
        event: benchmarks/README.md, Findings 1), or inline (`handle_inline`); they need
        no handle. Other tasks (admin stats, pub/sub listeners) are long-lived and
        joined: dedicated threads."""
        if target == self._handle_event_internal and not kwargs:
            if args[3][0] in self._inline_events:  # args: server, sid, eio_sid, data, namespace, id
                target(*args)
            elif not self._handler_pool.submit(target, *args):
                self._refuse_busy(*args[2:])
            return None
        return super().start_background_task(target, *args, **kwargs)

    @property
    def handler_pool(self) -> WorkerPool:
        """The event handlers' pool now (`shutdown` starts a fresh one): its threads and queue."""
        return self._handler_pool

    def run_handler(self, fn: Any, *args: Any) -> bool:
        """Run `fn(*args)` on the event handlers' pool; False when it is full (or shut
        down): the job will not run."""
        return self._handler_pool.submit(fn, *args)

    def _refuse_busy(self, eio_sid: str, data: Any, namespace: str, id: int | None) -> None:
        """Answer an event the handler pool is too full to take (`WorkerPool`), so its
        caller hears it at once instead of waiting out its timeout."""
        if self.refused_busy is not None:
            self.refused_busy(data[0])
        if id is not None:
            busy = InternalError(
                f"the Server is busy ({self._handler_pool.max_workers} handlers running, "
                f"{self._handler_pool.max_queued} waiting); try again",
                details={"busy": True},
            )
            self._send_answer(eio_sid, namespace, id, refusal_for(data[0], busy))

    def shutdown(self, timeout: float = HANDLER_STOP_TIMEOUT) -> None:
        """Stop Engine.IO's background threads, then wait up to `timeout` for event
        handlers still running (call after dropping connections: their pending calls
        fail then and the handlers return). Events of clients that reconnect afterwards
        (`SMCPServer.drop_connections` keeps serving) get a fresh pool."""
        super().shutdown()
        pool, self._handler_pool = self._handler_pool, WorkerPool("smcp-server-worker")
        pool.shutdown(timeout)
        self.auth_failures.log_summary()

    def forget_ack(self, sid: str, callback: Any) -> None:
        """Drop the ack callback `callback` of an emit to `sid` (`pending.Acks`); a late
        answer to it is then ignored by python-socketio."""
        table = self.manager.callbacks.get(sid)
        if table is not None:
            for id, kept in list(table.items()):
                if id != 0 and kept == callback:  # 0 holds the table's ack id counter
                    table.pop(id, None)

    def forget_acks(self, sid: str) -> None:
        """Drop the ack table of `sid`, a session gone (on this process or another)."""
        self.manager.callbacks.pop(sid, None)

    def _handle_eio_connect(self, eio_sid: str, environ: dict[str, Any]) -> Any:
        """python-socketio's, for at most `max_connections_per_ip` Engine.IO sessions per
        client address and none from an address backed off for failed authentications
        (False makes engineio answer 401), each closed unless it connects to a namespace
        within `handshake_timeout`: until then it has shown no credentials, yet holds a
        worker thread (websocket) and memory."""
        address = str(environ.get("REMOTE_ADDR", ""))
        if self.auth_failures.backed_off(address):
            self.auth_failures.refused(address, checked=False, closed=True)
            return False
        if not self._per_address.admit(address):
            logger.warning(
                "refused a connection from %s: %d open from that address (max_connections_per_ip)",
                address,
                self._per_address.open_from(address),
            )
            return False
        self._admitted[eio_sid] = _Admitted(address, self._handshake_deadline(eio_sid))
        return super()._handle_eio_connect(eio_sid, environ)

    def _handle_eio_disconnect(self, eio_sid: str, *reason: Any) -> None:
        """python-socketio's (which takes a reason from 5.12 on), forgetting the session's
        address, handshake deadline and message bound."""
        super()._handle_eio_disconnect(eio_sid, *reason)
        self.eio.forget_session(eio_sid)
        admitted = self._admitted.pop(eio_sid, None)
        if admitted is not None:
            admitted.deadline.cancel()
            self._per_address.release(admitted.address)

    def _handshake_deadline(self, eio_sid: str, after: float | None = None) -> Deadline:
        """`_end_handshake` in `after` seconds (default: `handshake_timeout`)."""
        delay = self._handshake_timeout if after is None else after
        return self.eio.deadlines.call_at(time.monotonic() + delay, lambda: self._end_handshake(eio_sid))

    def _in_a_namespace(self, eio_sid: str) -> bool:
        return any(self.manager.sid_from_eio_sid(eio_sid, ns) for ns in list(self.manager.get_namespaces()))

    def _end_handshake(self, eio_sid: str) -> None:
        """Close `eio_sid` unless it connected to a namespace; one whose CONNECT is being
        handled is looked at again once that is done (cut mid-way, python-socketio's
        connect handling fails on the session's forgotten environment)."""
        with self._handshakes:
            if eio_sid in self._connecting:
                admitted = self._admitted.get(eio_sid)
                if admitted is not None:
                    admitted.deadline = self._handshake_deadline(eio_sid, after=_CONNECT_RECHECK)
                return
            if eio_sid not in self.eio.sockets or self._in_a_namespace(eio_sid):
                return
            admitted = self._admitted.get(eio_sid)
            logger.info(
                "closed Engine.IO connection %s from %s: no namespace connect within %.1f s (handshake_timeout)",
                eio_sid,
                admitted.address if admitted is not None else "?",
                self._handshake_timeout,
            )
            self.eio.cut(eio_sid)

    def _left_namespace(self, eio_sid: str) -> None:
        """A session that is no longer in any namespace (it sent DISCONNECT, or the Server
        disconnected it) but keeps its Engine.IO connection is back to unauthenticated:
        the small message bound, and `handshake_timeout` to connect again or be closed."""
        admitted = self._admitted.get(eio_sid)
        sock = self.eio.sockets.get(eio_sid)
        if admitted is None or sock is None or sock.closing or sock.closed or self._in_a_namespace(eio_sid):
            return
        self.eio.set_authenticated(eio_sid, False)
        admitted.deadline.cancel()
        admitted.deadline = self._handshake_deadline(eio_sid)

    def _handle_disconnect(self, eio_sid: str, namespace: str | None, *reason: Any) -> None:
        super()._handle_disconnect(eio_sid, namespace, *reason)
        self._left_namespace(eio_sid)

    def disconnect(self, sid: str, namespace: str | None = None, ignore_queue: bool = False) -> None:
        eio_sid = self.manager.eio_sid_from_sid(sid, namespace or "/")
        super().disconnect(sid, namespace, ignore_queue)
        if eio_sid is not None:
            self._left_namespace(eio_sid)

    def _handle_event_internal(
        self, server: socketio.Server, sid: str, eio_sid: str, data: Any, namespace: str, id: int | None
    ) -> None:
        """python-socketio's, plus: a handler that returns a `Future` is answered when the
        future is done, from the thread that completes it (a routed request: the thread
        that received the Computer's ack), and its handler thread is free meanwhile."""
        answer = server._trigger_event(data[0], namespace, sid, *data[1:])
        if isinstance(answer, Future):
            if id is not None:
                answer.add_done_callback(lambda done: self._send_answer(eio_sid, namespace, id, done.result()))
        elif answer != self.not_handled and id is not None:
            self._send_answer(eio_sid, namespace, id, answer)

    def _send_answer(self, eio_sid: str, namespace: str, id: int, answer: Any) -> None:
        """An ACK packet the way python-socketio makes one: a tuple is several values."""
        data = [] if answer is None else list(answer) if isinstance(answer, tuple) else [answer]
        self._send_packet(eio_sid, self.packet_class(packet.ACK, namespace=namespace, id=id, data=data))

    def _handle_eio_message(self, eio_sid: str, data: Any) -> None:
        """python-socketio's, answering undecodable packets, and refusing binary ones:
        A2C-SMCP is JSON only (blobs travel as base64), and python-socketio would hold a
        packet's declared attachments in memory, as many as the client announces."""
        if not isinstance(data, str):
            logger.warning("dropped a binary message from %s: A2C-SMCP carries JSON only", eio_sid)
            return
        if data[:1] in _BINARY_PACKET_TYPES:
            self._refuse(eio_sid, data, "binary attachments are not part of A2C-SMCP")
            return
        try:
            super()._handle_eio_message(eio_sid, data)
        except RecursionError:
            self._refuse(eio_sid, data, "its JSON is nested too deeply")
        except ValueError as exc:  # json.JSONDecodeError included
            self._refuse(eio_sid, data, f"it cannot be decoded ({str(exc)[:100]})")

    def _handle_connect(self, eio_sid: str, namespace: str | None, data: Any) -> None:
        """python-socketio's, refusing a second CONNECT for a namespace this Engine.IO
        session already has a Socket.IO session in (python-socketio would make a second
        sid on the same socket, and the first, still in its office room and registry,
        would outlive the disconnect, which ends only the newest) and, unchecked, every
        CONNECT from an address backed off for failed authentications. A session's
        refused CONNECTs count (`auth_failures`); past `max_auth_failures_per_socket` it
        is closed. An accepted one lifts the session's message bound."""
        if self.manager.sid_from_eio_sid(eio_sid, namespace or "/") is not None:
            logger.warning("refused a second connect to %s on Engine.IO session %s", namespace or "/", eio_sid)
            self._refuse_connect(eio_sid, namespace, "already connected to this namespace", ErrorCode.BAD_REQUEST)
            return
        admitted = self._admitted.get(eio_sid)
        checked = admitted is None or not self.auth_failures.backed_off(admitted.address)
        if checked:
            with self._handshakes:
                if eio_sid not in self.eio.sockets:  # closed meanwhile (its handshake deadline)
                    return
                self._connecting.add(eio_sid)
            try:
                super()._handle_connect(eio_sid, namespace, data)
            finally:
                with self._handshakes:
                    self._connecting.discard(eio_sid)
            if self.manager.sid_from_eio_sid(eio_sid, namespace or "/") is not None:
                self.eio.set_authenticated(eio_sid, True)
                return
        else:
            refusal = AuthError("too many failed authentications from this address; try again later")
            self._refuse_connect(eio_sid, namespace, str(refusal), ErrorCode.UNAUTHORIZED)
        if admitted is None:  # not admitted by `_handle_eio_connect`: closing already
            return
        admitted.refused += 1
        closing = admitted.refused >= self._max_auth_failures
        self.auth_failures.refused(admitted.address, checked=checked, closed=closing)
        if closing:
            self.eio.cut(eio_sid)

    def _refuse_connect(self, eio_sid: str, namespace: str | None, message: str, code: ErrorCode) -> None:
        refusal = {"message": message, "data": {"code": int(code)}}
        self._send_packet(eio_sid, self.packet_class(packet.CONNECT_ERROR, data=refusal, namespace=namespace))

    def _handle_event(self, eio_sid: str, namespace: str | None, id: int | None, data: Any) -> None:
        """python-socketio's, for well-formed events whose name is not reserved. It would
        run a lifecycle handler for an *event* named `disconnect` or `connect`: a client
        could leave the registry (and its office's notice) while staying in the room."""
        if not (isinstance(data, list) and data and isinstance(data[0], str)):
            self._answer_refusal(eio_sid, namespace, id, "an event must be a JSON array whose first item is the event name")
        elif data[0] in events.RESERVED_EVENT_NAMES:
            self._answer_refusal(
                eio_sid, namespace, id, f"event name {data[0]!r} is reserved by Socket.IO", details={"event": data[0]}
            )
        else:
            super()._handle_event(eio_sid, namespace, id, data)

    def _refuse(self, eio_sid: str, data: Any, why: str) -> None:
        header = _EVENT_HEADER.match(data) if isinstance(data, str) else None
        if header is None:  # not an event: there is nobody waiting for an answer
            logger.warning("dropped a malformed packet from %s: %s", eio_sid, why)
            return
        namespace, id = header.group("namespace"), header.group("id")
        name = _EVENT_NAME.match(data, header.end())
        self._answer_refusal(
            eio_sid, namespace, int(id) if id else None, f"malformed event packet: {why}", event=name and name.group(1)
        )

    def _answer_refusal(
        self,
        eio_sid: str,
        namespace: str | None,
        id: int | None,
        message: str,
        details: dict[str, Any] | None = None,
        event: str | None = None,
    ) -> None:
        """A 400 in the shape `event` answers with (`answers.refusal_for`), to a packet
        no handler runs for."""
        namespace = namespace or "/"
        sid = self.manager.sid_from_eio_sid(eio_sid, namespace)
        logger.warning("refused an event from %s: %s", sid or eio_sid, message)
        if sid is None or id is None:
            return
        self._send_answer(eio_sid, namespace, id, refusal_for(event, BadRequestError(message, details=details)))


class _Admitted:
    """An Engine.IO session's client address, its handshake deadline (re-armed when it
    leaves its namespace) and how many of its namespace CONNECTs were refused."""

    __slots__ = ("address", "deadline", "refused")

    def __init__(self, address: str, deadline: Deadline) -> None:
        self.address = address
        self.deadline = deadline
        self.refused = 0


#: Socket.IO packet types BINARY_EVENT and BINARY_ACK, as the first character of a packet.
_BINARY_PACKET_TYPES = frozenset({str(packet.BINARY_EVENT), str(packet.BINARY_ACK)})
#: The start of a Socket.IO (BINARY_)EVENT packet: type, attachments, namespace, ack id.
_EVENT_HEADER = re.compile(r"[25](?:\d+-)?(?:(?P<namespace>/[^,?]*)[^,]*,)?(?P<id>\d{1,15})?")
#: The event name a packet's JSON array starts with (when it is a plain string), read
#: without decoding the rest: what a refusal's shape depends on.
_EVENT_NAME = re.compile(r'\s*\[\s*"([^"\\]{1,200})"')


class StoppableRedisManager(socketio.RedisManager):
    """python-socketio's Redis client manager (emits, rooms and acks across Server
    processes), bounded under a Redis that hangs and stoppable.

    * It publishes from one thread of its own (`publisher`): the stock `_publish` runs on
      the emitting thread, which may be the one reading a client's socket.
    * Its listener reads on a connection of its own without a read timeout (the other
      has one, `socket_timeout`): it waits for messages as long as none come, where a
      timed-out read would make the stock listener pause and subscribe again, missing
      what is published meanwhile.
    * Its listener thread ends on `close()` (the stock one loops for the life of the
      process): the private generator `_listen` raises `_ListenerClosed` once closing,
      which the private `_thread` loop lets through (it catches every Exception, and
      logs an error when the generator returns) and our `_thread` ends on.
    * A node accepts its first client only once its listener hears Redis (`initialize`).
    * Its ack ids never repeat: the stock ids count per sid from 1 in a table that
      `forget_acks` drops when a session is heard gone, which across processes may be
      while it lives on (its node declared dead, then written back); a table counted
      again from 1 would let a late answer to a failed call settle a new one. One
      counter for the whole manager hands out each id once (private `_generate_ack_id`;
      tox's `lowest` environment runs the oldest python-socketio allowed)."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self._closing = threading.Event()
        self._publisher = Publisher(super()._publish)
        self._ack_ids = itertools.count(1)
        #: Set once the listener has heard this manager's own probe (`initialize`).
        self.listening = threading.Event()
        self._probe = uuid.uuid4().hex

    def initialize(self, timeout: float = LISTEN_TIMEOUT) -> None:
        """Start the listener, then wait (at most `timeout`) until it hears a probe this
        manager publishes: from then on a message another node publishes reaches this
        one. The stock listener subscribes later, on its own thread, so a node's first
        client could miss what another node sent it meanwhile (a routed tool call, lost
        to its timeout). Under a Redis that is down the listener keeps retrying; the wait
        ends with a warning and the node serves."""
        super().initialize()
        if self.write_only:
            return
        deadline = time.monotonic() + timeout
        while not self._closing.is_set():
            self._publish({"smcp_probe": self._probe})  # no "method": no Server acts on it
            if self.listening.wait(min(PROBE_INTERVAL, max(0.0, deadline - time.monotonic()))):
                return
            if time.monotonic() >= deadline:
                logger.warning("the Redis listener was not subscribed after %.1f s; it keeps trying", timeout)
                return

    def _generate_ack_id(self, sid: str, callback: Any) -> int:
        id = next(self._ack_ids)
        self.callbacks.setdefault(sid, {0: self._ack_ids})[id] = callback  # 0: the table's counter, as stock
        return id

    def _publish(self, data: Any) -> None:
        self._publisher.submit(data)

    def _redis_connect(self) -> None:
        super()._redis_connect()
        from ..scale_out.redis_connection import redis_client  # the `redis` extra, which python-socketio has imported already

        # the master the Sentinels name, for a Sentinel URL, as python-socketio's own connection
        self.pubsub = redis_client(self.redis_url, read_timeout=None).pubsub(ignore_subscribe_messages=True)

    def _listen(self) -> Any:
        probe = self._probe.encode()
        for message in super()._listen():
            if self._closing.is_set():
                raise _ListenerClosed
            if not self.listening.is_set() and probe in (message.encode() if isinstance(message, str) else message):
                self.listening.set()  # (a str if decoded) once heard, messages are no longer searched
                continue
            yield message

    def _thread(self) -> None:
        try:
            super()._thread()
        except _ListenerClosed:
            pass

    def close(self, timeout: float = HANDLER_STOP_TIMEOUT) -> None:
        """Publish what is queued, wake the listener with a message no Server acts on,
        then join both threads (if Redis is down the listener is retrying a connection
        and ends once it gets one)."""
        self._closing.set()
        thread = getattr(self, "thread", None)
        if thread is not None:
            self._publish("closing")
        if not self._publisher.close(timeout):
            logger.warning("Redis publisher thread still running after %.1f s", timeout)
        if thread is None:
            return
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("Redis listener thread still running after %.1f s", timeout)


class _ListenerClosed(BaseException):
    """Ends `StoppableRedisManager`'s listener: a BaseException, so python-socketio's
    `except Exception` retry loop does not catch it."""
