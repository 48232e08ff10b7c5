"""The python-socketio Server the SMCP Server runs on, made stoppable, strict about
malformed packets, and bounded in what one client may hold (`limits.py`).

Engine.IO (threading mode) starts one ping thread per connection that sleeps
`ping_interval` (25 s) between pings, and closing a polling socket the usual way waits
for the client to fetch its last packet (DESIGN §7). Our `stop()` must end every thread
promptly, so sleeps here end at shutdown and `drop_all_connections` closes without
waiting.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from concurrent.futures import Future
from typing import Any, Iterable

import engineio
import socketio
from engineio.async_drivers._websocket_wsgi import SimpleWebSocketWSGI
from socketio import packet

from ..protocol import events
from ..protocol.errors import BadRequestError, ErrorCode
from ..protocol.extensions import advertisement
from ..threads.deadlines import Deadline, Deadlines
from ..threads.worker_pool import WorkerPool
from .admission import ConnectionsPerAddress
from .limits import DEFAULT_MAX_SEND_BACKLOG, ServerLimits
from .request_deadlines import shutdown_socket
from .send_backlog import BacklogQueue

logger = logging.getLogger(__name__)


class StoppableEngineIO(engineio.Server):
    """An Engine.IO server whose sleeps return at `shutdown()`, which drops a client that
    lets more than `max_send_backlog` bytes wait to be sent to it, and can cut any
    connection (`cut`) so the worker thread it held is free at once.

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
        self._dropping = False
        self.max_send_backlog = max_send_backlog
        #: Handshake deadlines and drops of overfull clients (never on a sender's thread).
        self.deadlines = Deadlines("smcp-engineio-deadlines")
        self._websockets: dict[str, socket.socket] = {}
        self._overflowing: set[str] = set()
        self._async: dict[str, Any] = {**self._async, "websocket": _CuttableWebSocket}

    def sleep(self, seconds: float = 0) -> None:
        self._stopping.wait(seconds)

    def shutdown(self) -> None:
        """Idempotent (Engine.IO's own shutdown fails when called twice); the deadline
        thread is stopped every time (clients reconnecting after `drop_all_connections`
        start it again)."""
        self.deadlines.shutdown()
        if self._stopping.is_set():
            return
        self._stopping.set()
        super().shutdown()

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
        raw = self._websockets.pop(eio_sid, None)
        if raw is not None:
            shutdown_socket(raw)

    def send_packet(self, sid: str, pkt: Any) -> None:
        if self._dropping or sid in self._overflowing:
            return
        super().send_packet(sid, pkt)
        queue = getattr(self.sockets.get(sid), "queue", None)
        if isinstance(queue, BacklogQueue) and queue.backlog > self.max_send_backlog:
            self._drop_overfull(sid, queue.backlog)

    def _trigger_event(self, event: str, *args: Any, **kwargs: Any) -> Any:
        """Engine.IO's, adding our extension list to the OPEN packet of a new session
        (`protocol.extensions`), so an Agent learns what this Server routes before its
        first request. Engine.IO builds that packet inline and queues it just before it
        triggers `connect`, with no hook in between, so it is amended in the queue here
        (it is encoded only when sent, after this returns)."""
        if event == "connect":
            self._advertise_extensions(args[0])
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
        """Stop queueing for `sid` and drop it from the deadline thread: the sender may
        hold locks (an office broadcast) that the disconnect handlers take."""
        if sid in self._overflowing:
            return
        self._overflowing.add(sid)
        logger.warning(
            "dropping Engine.IO connection %s: %d bytes wait to be sent to it, more than max_send_backlog (%d); "
            "the client is not reading",
            sid,
            backlog,
            self.max_send_backlog,
        )

        def drop() -> None:
            try:
                self.cut(sid)
            finally:
                self._overflowing.discard(sid)

        self.deadlines.call_at(0.0, drop)

    def _websocket_opened(self, eio_sid: str, raw: socket.socket) -> None:
        self._websockets[eio_sid] = raw

    def _websocket_closed(self, eio_sid: str) -> None:
        self._websockets.pop(eio_sid, None)


class _CuttableWebSocket(SimpleWebSocketWSGI):
    """engineio's threading websocket, which registers its TCP socket with the server
    (for `StoppableEngineIO.cut`), bounds reads and writes on it by the ping cycle
    (engineio tries to but looks for attributes simple-websocket does not have: a
    vanished peer or a client that stops reading would hold the thread forever), and
    shuts it when closed (the thread reading it then returns; a client that never
    answers the close frame held it)."""

    def __init__(self, handler: Any, server: StoppableEngineIO, **kwargs: Any) -> None:
        super().__init__(handler, server, **kwargs)
        self._server = server
        self._raw: socket.socket | None = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        key = next((k for k in _RAW_SOCKET_KEYS if k in environ), None)
        if key is None:  # a WSGI server that hands out no raw socket: engineio as it is
            return super().__call__(environ, start_response)
        eio_sid = self.app.__self__.sid  # the handler is the Engine.IO socket's bound method
        self._raw = environ[key]
        self._raw.settimeout(self._server.ping_interval + self._server.ping_timeout)
        self._server._websocket_opened(eio_sid, self._raw)
        try:
            return super().__call__({**environ, key: _WholeSends(self._raw)}, start_response)
        finally:
            self._server._websocket_closed(eio_sid)

    def close(self) -> None:
        try:
            super().close()
        except OSError:  # the peer is gone or not reading (send timed out)
            pass
        if self._raw is not None:
            shutdown_socket(self._raw)


#: Where werkzeug and gunicorn put a request's TCP socket in the WSGI environment (the
#: keys simple-websocket looks for).
_RAW_SOCKET_KEYS = ("werkzeug.socket", "gunicorn.socket")


class _WholeSends:
    """A TCP socket for simple-websocket whose `send` sends all of it: simple-websocket
    ignores the count `socket.send` returns, and with a timeout set that may be part of
    a frame."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def send(self, data: bytes) -> int:
        self._sock.sendall(data)
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


#: Seconds `SocketIOServer.shutdown` waits for event handlers still running.
HANDLER_STOP_TIMEOUT = 5.0


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
        self._handler_pool = WorkerPool("smcp-server-worker")
        self._inline_events: set[str] = set()
        self._handshake_timeout = limits.handshake_timeout
        self._per_address = ConnectionsPerAddress(limits.max_connections_per_ip)
        self._admitted: dict[str, tuple[str, Deadline]] = {}  # eio_sid: (address, handshake deadline)

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
            else:
                self._handler_pool.submit(target, *args)
            return None
        return super().start_background_task(target, *args, **kwargs)

    def shutdown(self, timeout: float = HANDLER_STOP_TIMEOUT) -> None:
        """Stop Engine.IO's background threads, then wait up to `timeout` for event
        handlers still running (call after dropping connections: their pending calls
        fail then and the handlers return). Events of clients that reconnect afterwards
        (`SMCPServer.drop_connections` keeps serving) get a fresh pool."""
        super().shutdown()
        pool, self._handler_pool = self._handler_pool, WorkerPool("smcp-server-worker")
        pool.shutdown(timeout)

    def _handle_eio_connect(self, eio_sid: str, environ: dict[str, Any]) -> Any:
        """python-socketio's, for at most `max_connections_per_ip` Engine.IO sessions per
        client address (False makes engineio answer 401), each closed unless it connects
        to a namespace within `handshake_timeout`: until then it has shown no
        credentials, yet holds a worker thread (websocket) and memory."""
        address = str(environ.get("REMOTE_ADDR", ""))
        if not self._per_address.admit(address):
            logger.warning(
                "refused a connection from %s: %d open from that address (max_connections_per_ip)",
                address,
                self._per_address.open_from(address),
            )
            return False
        deadline = self.eio.deadlines.call_at(
            time.monotonic() + self._handshake_timeout, lambda: self._end_handshake(eio_sid)
        )
        self._admitted[eio_sid] = (address, deadline)
        return super()._handle_eio_connect(eio_sid, environ)

    def _handle_eio_disconnect(self, eio_sid: str, *reason: Any) -> None:
        """python-socketio's (which takes a reason from 5.12 on), forgetting the session's
        address and handshake deadline."""
        super()._handle_eio_disconnect(eio_sid, *reason)
        admitted = self._admitted.pop(eio_sid, None)
        if admitted is not None:
            address, deadline = admitted
            deadline.cancel()
            self._per_address.release(address)

    def _end_handshake(self, eio_sid: str) -> None:
        if eio_sid not in self.eio.sockets:
            return
        if any(self.manager.sid_from_eio_sid(eio_sid, ns) for ns in list(self.manager.get_namespaces())):
            return
        address = self._admitted.get(eio_sid, ("?",))[0]
        logger.info(
            "closed Engine.IO connection %s from %s: no namespace connect within %.1f s (handshake_timeout)",
            eio_sid,
            address,
            self._handshake_timeout,
        )
        self.eio.cut(eio_sid)

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
        session already has a Socket.IO session in: python-socketio would make a second
        sid on the same socket, and the first (still in its office room, still in the
        registry) would outlive the disconnect, which ends only the newest."""
        if self.manager.sid_from_eio_sid(eio_sid, namespace or "/") is not None:
            logger.warning("refused a second connect to %s on Engine.IO session %s", namespace or "/", eio_sid)
            refusal = {"message": "already connected to this namespace", "data": {"code": int(ErrorCode.BAD_REQUEST)}}
            self._send_packet(eio_sid, self.packet_class(packet.CONNECT_ERROR, data=refusal, namespace=namespace))
            return
        super()._handle_connect(eio_sid, namespace, data)

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
        self._answer_refusal(eio_sid, namespace, int(id) if id else None, f"malformed event packet: {why}")

    def _answer_refusal(
        self, eio_sid: str, namespace: str | None, id: int | None, message: str, details: dict[str, Any] | None = None
    ) -> None:
        namespace = namespace or "/"
        sid = self.manager.sid_from_eio_sid(eio_sid, namespace)
        logger.warning("refused an event from %s: %s", sid or eio_sid, message)
        if sid is None or id is None:
            return
        self._send_answer(eio_sid, namespace, id, BadRequestError(message, details=details).to_wire())


#: Socket.IO packet types BINARY_EVENT and BINARY_ACK, as the first character of a packet.
_BINARY_PACKET_TYPES = frozenset({str(packet.BINARY_EVENT), str(packet.BINARY_ACK)})
#: The start of a Socket.IO (BINARY_)EVENT packet: type, attachments, namespace, ack id.
_EVENT_HEADER = re.compile(r"[25](?:\d+-)?(?:(?P<namespace>/[^,?]*)[^,]*,)?(?P<id>\d{1,15})?")


class StoppableRedisManager(socketio.RedisManager):
    """python-socketio's Redis client manager (emits, rooms and acks across Server
    processes) whose listener thread ends on `close()`: the stock one loops for the life
    of the process. Its private generator `_listen` raises `_ListenerClosed` once closing,
    which its private `_thread` loop lets through (it catches every Exception, and logs
    an error when the generator returns) and our `_thread` ends on."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self._closing = threading.Event()

    def _listen(self) -> Any:
        for message in super()._listen():
            if self._closing.is_set():
                raise _ListenerClosed
            yield message

    def _thread(self) -> None:
        try:
            super()._thread()
        except _ListenerClosed:
            pass

    def close(self, timeout: float = HANDLER_STOP_TIMEOUT) -> None:
        """End the listener: wake it with a message no Server acts on, then join it (if
        Redis is down it is retrying a connection and ends once it gets one)."""
        self._closing.set()
        thread = getattr(self, "thread", None)
        if thread is None:
            return
        self._publish("closing")
        thread.join(timeout)
        if thread.is_alive():
            logger.warning("Redis listener thread still running after %.1f s", timeout)


class _ListenerClosed(BaseException):
    """Ends `StoppableRedisManager`'s listener: a BaseException, so python-socketio's
    `except Exception` retry loop does not catch it."""
