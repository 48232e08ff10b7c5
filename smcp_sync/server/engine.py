"""The python-socketio Server the SMCP Server runs on, made stoppable and strict about
malformed packets.

Engine.IO (threading mode) starts one ping thread per connection that sleeps
`ping_interval` (25 s) between pings, and closing a polling socket the usual way waits
for the client to fetch its last packet (DESIGN §7). Our `stop()` must end every thread
promptly, so sleeps here end at shutdown and `drop_all_connections` closes without
waiting.
"""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import Future
from typing import Any, Iterable

import engineio
import socketio
from socketio import packet

from ..protocol import events
from ..protocol.errors import BadRequestError, ErrorCode
from ..worker_pool import WorkerPool

logger = logging.getLogger(__name__)


class StoppableEngineIO(engineio.Server):
    """An Engine.IO server whose sleeps return at `shutdown()`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._stopping = threading.Event()
        self._dropping = False

    def sleep(self, seconds: float = 0) -> None:
        self._stopping.wait(seconds)

    def shutdown(self) -> None:
        """Idempotent (Engine.IO's own shutdown fails when called twice)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        super().shutdown()

    def drop_all_connections(self) -> None:
        """Close every Engine.IO socket now, without a CLOSE packet and without waiting
        for delivery: clients see a lost transport and reconnect when a server is back.
        Each close runs the Socket.IO disconnect handlers; what they send meanwhile (e.g.
        a 404 for a request whose Computer was dropped first) is not sent: every client
        is losing its connection, and learns that from the transport."""
        self._dropping = True
        try:
            for eio_sid, sock in list(self.sockets.items()):
                sock.close(wait=False, abort=True, reason=self.reason.SERVER_DISCONNECT)
                self.sockets.pop(eio_sid, None)
        finally:
            self._dropping = False

    def send_packet(self, sid: str, pkt: Any) -> None:
        if not self._dropping:
            super().send_packet(sid, pkt)


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handler_pool = WorkerPool("smcp-server-worker")
        self._inline_events: set[str] = set()

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
