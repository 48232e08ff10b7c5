"""The one module that touches python-socketio's, python-engineio's and
websocket-client's internals on the client side: subclasses that change how a message
is read, written and dispatched, and the few private attributes the session must reach.
Everything else of `connection` uses the libraries' public API, so a new release of
them is checked here (tox's `lowest` environment runs the lowest versions setup.cfg
allows; the others the newest).

Why each part (the session's module doc, `session`, says more):

* `PromptCloseWebSocket` sends the close frame without waiting for the echo (werkzeug
  never sends one in time) and keeps what the Server announced in its open packet.
* `PooledEngineIOClient` resolves acks (and starts `Deferred` events) on the reader
  thread, runs other messages on the connection's `WorkerPool`, and writes messages on
  the sending thread.
* `PooledClient` refuses events from the Server that are malformed or named like
  Socket.IO's own (`connect`, `disconnect`), which the library would dispatch to the
  connection's lifecycle handlers, and measures each message it sends against the
  Server's limit on the encoding it sends (`message_limit`), so a message is serialized once.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import socket
import threading
from typing import Any, Callable

import engineio.exceptions
import engineio.packet
import socketio
import socketio.packet
import websocket

from ..protocol import events, extensions
from ..protocol.errors import BadRequestError, InternalError
from ..threads.worker_pool import WorkerPool
from ..threads.write_at_once import WRITE_AT_ONCE_MAX, room_to_write
from .message_limit import announced_limit, length_over, too_large

logger = logging.getLogger(__name__)


class PromptCloseWebSocket(websocket.WebSocket):
    """Sends the close frame but does not wait for the server's echo (see module doc), and
    keeps what the Server announces in the Engine.IO open packet it receives first: its
    limit on one message (`message_limit`) and the smcp_sync extensions it routes
    (`protocol.extensions`)."""

    max_message_length: int | None = None
    peer_extensions: frozenset[str] = frozenset()
    _opened = False

    def recv(self) -> Any:
        data = super().recv()
        if not self._opened and isinstance(data, str) and data.startswith("0"):
            self._opened = True
            self.max_message_length = announced_limit(data)
            self.peer_extensions = extensions.from_open_packet(data)
        return data

    def close(self, status: int = websocket.STATUS_NORMAL, reason: bytes | str = b"", timeout: float | None = 0) -> None:
        super().close(status, reason, timeout=0)

    def shutdown(self) -> None:
        """websocket-client's, after shutting the socket down for both directions: its
        `close` does that only when it could send the close frame, and closing alone
        does not wake the Engine.IO read loop blocked in `recv` on another thread (it
        waited out its timeout, ping_interval + ping_timeout, past our close)."""
        _shut_both_ways(self.sock)
        super().shutdown()  # type: ignore[no-untyped-call]


def _shut_both_ways(sock: socket.socket | None) -> None:
    """Shut `sock` down for reading and writing: a thread blocked in `recv` on it returns."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # not connected, or already shut down
            pass


#: An EVENT packet in text form as far as its event name: ``2/smcp,12["name"``.
_EVENT_HEAD = re.compile(r'2(?:(/[^,]*),)?\d*\["([^"\\]+)"')


class Deferred:
    """An event handler that answers later: `start(args, answer)` runs on the thread
    reading the socket, must not block, and has `answer(value)` called once, from any
    thread, when the answer is known (`session.Connection.on_deferred`)."""

    def __init__(self, start: Callable[[tuple[Any, ...], Callable[[Any], None]], None]):
        self.start = start

    def __call__(self, *args: Any) -> None:
        """Run by python-socketio for an event that waits for no answer."""
        self.start(args, _no_answer)


def _no_answer(value: Any) -> None:
    pass


class PooledEngineIOClient(engineio.Client):
    """Engine.IO client with fewer thread hand-offs per message (module doc).

    Incoming: an ack is resolved on the reader thread itself (resolving one only wakes the
    caller waiting for it, or passes the answer on without waiting: the relay's
    `session.PendingRequest.answered`), and so is an event whose
    handler is `Deferred` (`starts_inline`: it only starts the work); other messages run
    on `pool` instead of a new thread each. Outgoing: a message is written to the websocket
    by the thread that sends it instead of through the library's queue and writer thread
    (one message at a time, under this client's lock); control packets (pong, close) keep
    that path, and with it the writer's keep-alive (it gives up after ~30 s with nothing
    queued); websocket-client's frame lock keeps the two paths' frames whole. A write
    blocks only while the Server reads nothing (its socket buffer full), at most for the
    socket's timeout (Engine.IO's ping interval + timeout, after which the connection
    counts as lost), as the writer thread's would; other senders wait for it within their
    own timeouts (`Connection._send`); `send_soon` never waits.
    """

    def __init__(self, *args: Any, pool: WorkerPool, starts_inline: Callable[[str], bool], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._message_pool = pool
        self._starts_inline = starts_inline
        self._message_write = threading.Lock()  # one message at a time, so `send_soon` can tell

    def _connect_websocket(self, url: str, headers: dict[str, str], engineio_path: str) -> bool:
        """Engine.IO's, keeping the body of an HTTP 400 refusal of the handshake (the
        version check, `protocol.versioning`): Engine.IO reports only "Connection error",
        while its polling transport would pass the body on as the second argument, which
        python-socketio hands to `connect_error` handlers; so does this."""
        try:
            connected: bool = super()._connect_websocket(url, headers, engineio_path)
            return connected
        except engineio.exceptions.ConnectionError as exc:
            refused = exc.__context__
            if isinstance(refused, websocket.WebSocketBadStatusException) and refused.status_code == 400:
                raise engineio.exceptions.ConnectionError(exc.args[0], _json_body(refused.resp_body)) from refused
            raise

    def _trigger_event(self, event: str, *args: Any, run_async: bool = False, **kwargs: Any) -> Any:
        if run_async and event == "message" and event in self.handlers:
            if _is_ack(args[0]) or self._starts_inline(args[0]):
                return super()._trigger_event(event, *args, run_async=False, **kwargs)
            if not self._message_pool.submit(self.handlers[event], *args):
                self._refuse_busy(args[0])
            return None
        return super()._trigger_event(event, *args, run_async=run_async, **kwargs)

    def _refuse_busy(self, message: Any) -> None:
        """A request from the Server that the pool is too full to take (`WorkerPool`) is
        answered 500 at once, so its caller does not wait out its timeout."""
        try:
            pkt = socketio.packet.Packet(encoded_packet=message)
        except Exception:  # not a Socket.IO packet we can read: nobody to answer
            return
        if pkt.packet_type == socketio.packet.EVENT and pkt.id is not None:
            pool = self._message_pool
            busy = InternalError(
                f"this client is busy ({pool.max_workers} handlers running, {pool.max_queued} waiting); try again",
                details={"busy": True},
            )
            self.send(socketio.packet.Packet(socketio.packet.ACK, namespace=pkt.namespace, id=pkt.id, data=[busy.to_wire()]).encode())

    def _send_packet(self, pkt: engineio.packet.Packet) -> None:
        ws = self.ws
        if pkt.packet_type != engineio.packet.MESSAGE or self.current_transport != "websocket" or not self._writing(ws):
            super()._send_packet(pkt)
            return
        with self._message_write:
            self._write_message(ws, pkt)

    def send_soon(self, data: str) -> None:
        """Send `data` from this thread if the websocket takes it at once (short, no other
        message being written, room in the socket's buffer), else from the pool: the
        thread that has a `Deferred` event's answer (the Computer's event loop) never
        waits for a Server that reads nothing (at most for a control packet's few bytes,
        which the library's writer thread sends under websocket-client's own lock)."""
        ws = self.ws
        if len(data) <= WRITE_AT_ONCE_MAX and self._writing(ws) and self._message_write.acquire(blocking=False):
            try:
                if room_to_write(ws.sock):
                    self._write_message(ws, engineio.packet.Packet(engineio.packet.MESSAGE, data=data))
                    return
            finally:
                self._message_write.release()
        if not self._message_pool.submit(self.send, data):
            logger.info("could not send an answer, the connection is closing")

    def _write_message(self, ws: websocket.WebSocket, pkt: engineio.packet.Packet) -> None:
        if self.state != "connected":
            return  # what the library does too: the disconnect fails pending requests
        try:
            if pkt.binary:
                ws.send_binary(pkt.encode())
            else:
                ws.send(pkt.encode())
        except (websocket.WebSocketException, OSError) as exc:
            # The reader sees the same broken socket and reports the disconnect, which
            # fails every pending request at once: nothing to warn about twice (and an
            # orderly close racing a send is no fault at all).
            logger.info("could not send a message, the connection is closing: %s", exc)

    def _writing(self, ws: websocket.WebSocket | None) -> bool:
        """Whether `ws` is the live websocket: while (re)connecting, `ws` is still the
        previous one and the writer thread not started yet; it sends what was queued."""
        return ws is not None and self.write_loop_task is not None


def _json_body(body: bytes | None) -> Any:
    try:
        return json.loads(body or b"")
    except ValueError:
        return None


def _is_ack(message: Any) -> bool:
    """A Socket.IO ACK packet (type 3) in text form, e.g. ``3/smcp,12[...]``."""
    return isinstance(message, str) and message[:1] == "3"


#: What python-socketio encodes a packet's data with (`socketio.packet.Packet.encode`), made once.
_PACKET_JSON = json.JSONEncoder(separators=(",", ":"))


def event_packet(event: str, payload: Any, namespace: str, id: int) -> str:
    """The text of an EVENT packet with ack `id`, as `socketio.packet.Packet.encode` writes
    it for a payload without bytes (None: the event alone, as `socketio.Client.emit` sends it)."""
    args = "" if payload is None else "," + _PACKET_JSON.encode(payload)
    head = "2" if namespace == "/" else f"2{namespace},"
    return f"{head}{id}[{_PACKET_JSON.encode(event)}{args}]"


class PooledClient(socketio.Client):
    """A `socketio.Client` on a `PooledEngineIOClient` (via the hook python-socketio
    provides for choosing the Engine.IO client class)."""

    def __init__(self, *args: Any, pool: WorkerPool, **kwargs: Any):
        self._message_pool = pool
        self._teardown = threading.Lock()  # `disconnect` and `_handle_disconnect`: one at a time
        super().__init__(*args, **kwargs)

    def disconnect(self) -> None:
        """python-socketio's, never while the Server's DISCONNECT is handled (`_handle_disconnect`)."""
        with self._teardown:
            super().disconnect()

    def _handle_disconnect(self, namespace: str | None) -> None:
        """python-socketio's handling of the Server's DISCONNECT (on a pool worker), never
        at the same time as `disconnect()` (the session's close): both tear the Engine.IO
        client down, and its `disconnect()` is not safe for two callers. The second one
        resets the send queue under the first, dropping the writer thread's stop marker:
        the writer waits out its queue timeout (ping interval + 5 s), the reader waits for
        the writer, the first caller for the reader, without a timeout. And each changes
        the namespaces the other iterates (a RuntimeError in close(), a KeyError here)."""
        with self._teardown:
            super()._handle_disconnect(namespace)

    def _engineio_client_class(self) -> Callable[..., engineio.Client]:
        return functools.partial(PooledEngineIOClient, pool=self._message_pool, starts_inline=self._starts_inline)

    def _starts_inline(self, message: Any) -> bool:
        """Whether `message` is an event whose handler is `Deferred`."""
        head = _EVENT_HEAD.match(message) if isinstance(message, str) else None
        return head is not None and isinstance(self.handlers.get(head[1] or "/", {}).get(head[2]), Deferred)

    def _handle_event(self, namespace: str | None, id: int | None, data: Any) -> None:
        """python-socketio's, for well-formed events whose name is not reserved. It would
        run the connection's own `disconnect` (or `connect`) handler for an *event* of
        that name from the Server: the Agent or Computer would take itself for
        disconnected, failing its pending requests, while still connected."""
        if not (isinstance(data, list) and data and isinstance(data[0], str)):
            self._refuse_event(namespace, id, "an event must be a JSON array whose first item is the event name")
        elif data[0] in events.RESERVED_EVENT_NAMES:
            self._refuse_event(namespace, id, f"event name {data[0]!r} is reserved by Socket.IO", {"event": data[0]})
        elif id is None:
            super()._handle_event(namespace, id, data)
        else:
            self._answer_event(namespace or "/", id, data)

    def _answer_event(self, namespace: str, id: int, data: list[Any]) -> None:
        """python-socketio's `_handle_event` for an event that waits for an answer (the
        handler's return value; a tuple is several values; a `Deferred` handler's later
        `answer`), except that an answer longer than the Server accepts is replaced by an
        error saying so."""
        event = data[0]
        handler = self.handlers.get(namespace, {}).get(event)
        if isinstance(handler, Deferred):
            handler.start(tuple(data[1:]), functools.partial(self._answer, namespace, id, event, True))
            return
        self._answer(namespace, id, event, False, self._trigger_event(event, namespace, *data[1:]))

    def _answer(self, namespace: str, id: int, event: str, soon: bool, answer: Any) -> None:
        values = [] if answer is None else list(answer) if isinstance(answer, tuple) else [answer]
        encoded = self.packet_class(socketio.packet.ACK, namespace=namespace, id=id, data=values).encode()
        limit = self._message_limit()
        length = length_over(limit, encoded)
        if length is not None and limit is not None:
            reason = too_large(f"the answer to {event}", length, limit)
            logger.warning("%s", reason)
            refusal = InternalError(reason, details={"event": event, "length": length, "limit": limit}).to_wire()
            encoded = self.packet_class(socketio.packet.ACK, namespace=namespace, id=id, data=[refusal]).encode()
        self._write(encoded, soon)

    def _send_packet(self, pkt: socketio.packet.Packet) -> None:
        """python-socketio's, refusing an event longer than the Server accepts with a 400
        (its ack callback dropped) instead of sending it: the Server would drop the connection."""
        event = pkt.data[0] if pkt.packet_type == socketio.packet.EVENT else None
        self._send_encoded(pkt.encode(), event, pkt.namespace or "/", pkt.id)

    def emit_json(self, event: str, payload: Any, namespace: str, callback: Callable[..., None]) -> None:
        """`emit` with an ack `callback`, for a payload of JSON values only (no bytes: the
        relay's, read from JSON): its packet written as python-socketio would write it, the
        same text, without its walk of the payload for binary parts and the JSON encoder it
        makes per message (~5% of the relay's CPU per call: benchmarks/README.md, Run AE)."""
        if namespace not in self.namespaces:
            raise socketio.exceptions.BadNamespaceError(f"{namespace} is not a connected namespace.")
        id = self._generate_ack_id(namespace, callback)
        self._send_encoded(event_packet(event, payload, namespace, id), event, namespace, id)

    def _send_encoded(self, encoded: str | list[Any], event: str | None, namespace: str, id: int | None) -> None:
        limit = self._message_limit()
        length = length_over(limit, encoded)
        if length is not None and limit is not None and event is not None:
            if id is not None:
                self.callbacks.get(namespace, {}).pop(id, None)
            details = {"event": event, "length": length, "limit": limit}
            raise BadRequestError(too_large(event, length, limit), details=details)
        self._write(encoded)

    def _write(self, encoded: str | list[Any], soon: bool = False) -> None:
        """Send the packet's parts; `soon`: a text packet without waiting
        (`PooledEngineIOClient.send_soon`; a deferred answer is JSON text, one part)."""
        if soon and isinstance(encoded, str):
            self.eio.send_soon(encoded)
            return
        for part in encoded if isinstance(encoded, list) else [encoded]:
            self.eio.send(part)

    def _message_limit(self) -> int | None:
        ws = announced(self)
        return ws.max_message_length if ws is not None else None

    def _refuse_event(self, namespace: str | None, id: int | None, message: str, details: Any = None) -> None:
        logger.warning("refused an event from the Server: %s", message)
        if id is not None:  # the Server waits for an answer: a coded error
            refusal = BadRequestError(message, details=details).to_wire()
            self._send_packet(self.packet_class(socketio.packet.ACK, namespace=namespace or "/", id=id, data=[refusal]))


def new_client(pool: WorkerPool, request_timeout: float, **options: Any) -> PooledClient:
    """A client writing and dispatching as above, with the websocket transport's options."""
    return PooledClient(
        pool=pool,
        # skip websocket-client's pure-Python UTF-8 check of each text frame (~0.25 s per
        # MB: it capped blob chunks from the Server at ~1.5 MB/s); recv() still decodes
        # the frame as UTF-8, so invalid text fails there all the same
        websocket_extra_options={"class_": PromptCloseWebSocket, "skip_utf8_validation": True},
        request_timeout=request_timeout,
        **options,
    )


def bound_handshake(client: socketio.Client, timeout: float) -> None:
    """Bound the websocket handshake of the next connect by `timeout` seconds."""
    client.eio.request_timeout = timeout


def announced(client: socketio.Client) -> PromptCloseWebSocket | None:
    """The websocket that read the Server's open packet (what it announced), if any."""
    ws = getattr(client.eio, "ws", None)
    return ws if isinstance(ws, PromptCloseWebSocket) else None


def transport_connected(client: socketio.Client) -> bool:
    return bool(client.eio.state == "connected")


def read_loop(client: socketio.Client) -> threading.Thread | None:
    """The thread reading the websocket (it decides whether a drop reconnects)."""
    task: threading.Thread | None = client.eio.read_loop_task
    return task


def reconnect_task(client: socketio.Client) -> threading.Thread | None:
    """The thread of a reconnect under way (private, as in `Client.shutdown()` itself)."""
    task: threading.Thread | None = client._reconnect_task
    return task


def release_in_child(client: socketio.Client) -> None:
    """In a child of `os.fork()`: close this process's copy of the websocket's socket
    without a frame or a `shutdown()` (both would end the parent's session, whose socket
    it is), so the child neither writes on it nor keeps it open once the parent closes it."""
    sock = _websocket_socket(client)
    if sock is not None:
        sock.close()


def _websocket_socket(client: socketio.Client) -> socket.socket | None:
    """The socket under the client's websocket, if it has one."""
    sock = getattr(getattr(client.eio, "ws", None), "sock", None)
    return sock if isinstance(sock, socket.socket) else None


def cut_transport(client: socketio.Client) -> None:
    """Wake the Engine.IO threads of a client whose orderly disconnect did not end them:
    shut its socket down both ways (a `recv` waiting on it returns) and give its writer a
    stop marker (python-engineio's `disconnect` empties the send queue once done, which
    can take the marker from a writer that had not woken yet; it then waits out its queue
    timeout, ping interval + 5 s, and the reader waits for it). A stray marker is harmless:
    the client is not connected again (`session.Connection` makes one per `connect`)."""
    _shut_both_ways(_websocket_socket(client))
    if client.eio.write_loop_task is not None:
        client.eio.queue.put(None)


def abort_reconnect(client: socketio.Client) -> None:
    """Make a reconnect under way give up (private, as in `Client.shutdown()` itself)."""
    if client._reconnect_abort is not None:
        client._reconnect_abort.set()
