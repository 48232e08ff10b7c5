"""One Socket.IO client session on `/smcp`, shared by the Agent and the Computer.

Why a wrapper around `socketio.Client`: both roles need the same things the library
leaves to the application — a bounded connect, office membership that survives a
reconnect (a reconnect is a brand-new server session: new sid, no rooms), request/answer
calls that fail fast and typed instead of waiting out a timeout, and a close that stops
every thread.

Decisions (docs/ARCHITECTURE.md: Threads, Wire decisions, Library facts):

* websocket transport only, `handle_sigint=False` (Ctrl-C / a Jupyter interrupt must not
  disconnect every client).
* The connect URL declares our protocol version (`a2c_version`) and the smcp_sync
  extension requests this client handles; a Server that refuses the version (HTTP 400,
  `protocol.versioning`) gets a typed error and is never retried, also when the refusal
  comes while reconnecting. What the Server advertises in its Engine.IO open packet is
  kept (`max_message_length`, `peer_extensions`). Extra HTTP headers may be sent
  (`headers`: e.g. the key for an official 0.1.x Server).
* Reconnection is python-socketio's own, configured by `ReconnectPolicy` (on by default:
  first retry after ~0.5 s, doubling up to 5 s, retried until `close()`). It only happens
  after a transport drop; a server-initiated disconnect is final (library behaviour).
  After a reconnect the connection re-joins the office it was in (a refusal that may
  lift, e.g. its old session still holding its place, is retried for up to a minute:
  `rejoin`), then runs the `on_rejoined` callbacks, or `on_rejoin_failed` (and logs an
  error) when it gives up. Requests made meanwhile wait (within their own timeout) for
  the re-join instead of reaching the server outside any office.
* Requests pending when the connection drops fail at once with `NotConnectedError`
  (python-socketio would let them wait out their whole timeout).
* One request path for two forms: `request` sends and has a callback told the outcome
  on whichever thread settles it, so an answer can be passed on from the Socket.IO
  thread that read it with no other thread woken (the Agent relay writes it to its
  worker: docs/ARCHITECTURE.md, The Agent relay); `call` is `request` waited for on the
  caller's thread. A request is settled once (`PendingRequest`): by its answer, its
  timeout, a disconnect or a cancel, whichever comes first.
* Handlers registered with `on` never kill their thread: an `SMCPError` they raise
  becomes the spec's error object as the answer, anything else a generic 500 (logged
  here, never sent: no stack traces on the wire).
* Closing is fast. websocket-client's `close()` waits up to 3 s for the server's close
  frame; werkzeug never sends one in time: when the Engine.IO handler returns it keeps
  the HTTP/1.1 connection open and parses the next websocket frames as an HTTP request
  line, blocking in `readline()` until the client gives up. Measured on loopback:
  `disconnect()` took 3.0 s in 12 of 20 runs against werkzeug. We send the close frame
  and shut the socket down without waiting for the echo (`socketio_parts.PromptCloseWebSocket`):
  ~1 ms, and the server sees the disconnect within a few ms. Nothing is lost that the
  library did not already race away (it closes the socket while its writer thread may
  still be flushing).
* Fewer thread hand-offs per message, each of which costs a wake-up and, on a loaded
  machine, a scheduling delay (benchmarks/README.md, Findings 1 and 5): incoming events
  are handled on a pool of reused threads owned by the connection (`WorkerPool`), not on
  a new thread each as python-socketio does; incoming acks are resolved on the reader
  thread, and so are events whose handler only starts work that answers later
  (`on_deferred`: the Computer's tool calls, which then hold no thread while they run);
  outgoing messages are written by the sending thread, not handed to a writer
  thread (`socketio_parts.PooledEngineIOClient`). `close()` stops the pool. Every use of the
  libraries' internals is in `socketio_parts`.
* A child of `os.fork()` never uses the connection it inherited (`threads.forks`): it
  drops its copy of the socket without a byte written, takes fresh locks, and every
  request there fails at once with `ForkedConnectionError`; `close()` there is instant,
  and `connect()` opens the child's own session.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

import attrs
import engineio.exceptions
import engineio.packet
import socketio
import socketio.exceptions
import socketio.packet

from ..protocol import events, extensions
from ..protocol.codec import to_wire
from ..protocol.conventions import error_from_ack
from ..protocol.errors import AuthError, InternalError, SMCPError, SMCPTimeoutError
from ..protocol.models.room import EnterOfficeReq, LeaveOfficeReq, Role
from ..protocol.redaction import redact_text, redact_url
from ..protocol.versioning import handshake_url, refusal_error
from ..threads.deadlines import Deadline, Deadlines
from ..threads.forks import after_fork_in_child, parent_pid
from ..threads.gevent_order import require_same_threading, stdlib_patched
from ..threads.interruptible import wait_event
from ..threads.worker_pool import WorkerPool
from .client_auth import checked_headers
from .credentials import AuthSource, ConnectAuth
from .rejoin import RETRIED_CODES, RejoinPolicy
from .socketio_parts import (
    Deferred,
    PooledClient,
    abort_reconnect,
    announced,
    bound_handshake,
    cut_transport,
    new_client,
    read_loop,
    reconnect_task,
    release_in_child,
    transport_connected,
)

logger = logging.getLogger(__name__)

#: Seconds `connect` waits for the websocket handshake and the namespace by default.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds `join_office` / `leave_office` wait for the Server's ack by default.
DEFAULT_JOIN_TIMEOUT = 10.0
#: How an automatic re-join retries refusals that may lift (`rejoin`).
REJOIN = RejoinPolicy()
#: Seconds `emit` waits for a message another thread is writing to be written.
DEFAULT_EMIT_TIMEOUT = 10.0
#: Seconds `close` waits for the client's threads by default.
DEFAULT_CLOSE_TIMEOUT = 5.0
#: The share of `close`'s timeout after which it cuts a transport whose orderly
#: disconnect has not ended the client's threads (`socketio_parts.cut_transport`).
CUT_AFTER_SHARE = 0.5
#: How often `close` sets the abort flag of a reconnect task that is just starting.
_RECONNECT_ABORT_POLL = 0.02
#: What `connect` accepts (python-socketio maps http(s) and ws(s) alike to websockets).
_URL_SCHEMES = frozenset({"http", "https", "ws", "wss"})

Handler = Callable[[Any], Any]
#: ``handler(payload, reply)``: starts the work; ``reply(produce)`` answers (`Connection.on_deferred`).
DeferredHandler = Callable[[Any, Callable[[Callable[[], Any]], None]], None]

class NotConnectedError(SMCPError, ConnectionError):
    """No usable session: never connected, closed, refused, or lost and not yet back.

    Also a builtin `ConnectionError`, so generic network error handling catches it. Shown
    without the `[500]` label of the errors a Server answers: nothing answered here."""

    def __str__(self) -> str:
        return self.message


class ForkedConnectionError(NotConnectedError):
    """The connection was open when the process forked: its session belongs to the parent
    (`Connection` in a child of `os.fork()`). Connect in the child instead."""


@attrs.frozen(kw_only=True)
class ReconnectPolicy:
    """How the client reconnects after a transport drop (python-socketio's options).

    `delay` is the first wait in seconds, doubled after each failed attempt up to
    `delay_max`; each wait is shifted by up to ± `randomization` seconds so many clients
    of a restarted server do not reconnect in lockstep. Attempts go on until `close()`.
    """

    enabled: bool = True
    delay: float = 0.5
    delay_max: float = 5.0
    randomization: float = 0.25

    def client_options(self) -> dict[str, Any]:
        return {
            "reconnection": self.enabled,
            "reconnection_attempts": 0,
            "reconnection_delay": self.delay,
            "reconnection_delay_max": self.delay_max,
            "randomization_factor": self.randomization,
        }


#: ``on_settled(answer, error)``: how a request ended (`Connection.request`).
Settled = Callable[[Any, "SMCPError | None"], None]


class PendingRequest:
    """One request waiting for its answer (`Connection.request`). It is settled once: by
    its answer, its timeout (`expire`), a disconnect, or `cancel`; the outcome is kept
    before `on_settled` is told, so whoever lost a race to settle it can read it."""

    __slots__ = ("event", "timeout", "deadline", "answer", "error", "timer", "_on_settled", "_connection")

    def __init__(self, connection: Connection, event: str, timeout: float, on_settled: Settled):
        self.event = event
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.answer: Any = None
        self.error: SMCPError | None = None
        self.timer: Deadline | None = None  # the expiry of a request nobody waits for
        self._on_settled = on_settled
        self._connection = connection

    def answered(self, *args: Any) -> None:
        """The ack (on the Socket.IO thread): what `call` returns, or the error it raises."""
        answer = args[0] if len(args) == 1 else list(args) if args else None
        self._connection._settle(self, answer, SMCPError.from_wire(answer))

    def expire(self) -> None:
        """Settle as a timeout (408), unless something else settled it first."""
        timeout = self.timeout
        error = SMCPTimeoutError(
            f"no answer to {self.event} within {timeout:g}s", details={"event": self.event, "timeout": timeout}
        )
        self._connection._settle(self, None, error)

    def cancel(self) -> bool:
        """Forget the request: `on_settled` is not called, a late answer is dropped. False
        when it was settled already."""
        return self._connection._settle(self, None, None, tell=False)

    def outcome(self) -> Any:
        """The answer, or raise the error, of a settled request."""
        if self.error is not None:
            raise self.error
        return self.answer

    def tell(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        try:
            self._on_settled(self.answer, self.error)
        except Exception:  # never into the thread that settled it (the Socket.IO reader's, say)
            logger.exception("the callback of %s failed", self.event)


class Connection:
    """A `socketio.Client` on `/smcp` for one named Agent or Computer.

    Thread-safe: `call`, `emit`, `join_office`... may be used from many threads at once.
    """

    _DISCONNECTED, _CONNECTING, _CONNECTED, _RECONNECTING = "disconnected", "connecting", "connected", "reconnecting"
    #: In a child of `os.fork()`, for a connection the parent had open (module doc).
    _FORKED = "inherited through fork"

    def __init__(
        self,
        role: Role,
        name: str,
        *,
        auth: AuthSource = None,
        headers: Mapping[str, str] | None = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        deadlines: Deadlines | None = None,
    ):
        """`deadlines` expires the requests made with `request` (a process holding many
        connections shares one: the relay); by default the connection has its own, whose
        thread runs only while such requests are pending."""
        self.role = role
        self.name = name
        self._auth = ConnectAuth(auth, f"{role} {name!r}")
        self._headers = checked_headers(headers)
        self._reconnect = reconnect
        self._handlers: dict[str, Callable[..., Any]] = {}
        self._pool = WorkerPool(f"smcp-{role}-worker")
        self._sio = self._new_client()
        self._emit_lock = threading.Lock()  # python-socketio's emit is not thread-safe
        self._state_changed = threading.Condition()
        self._state = self._DISCONNECTED
        self._ready = False  # connected and, after a reconnect, re-joined
        self._closing = False
        self._url: str | None = None
        self._office_id: str | None = None
        self._pending: set[PendingRequest] = set()
        self._deadlines = deadlines if deadlines is not None else Deadlines(f"smcp-{role}-deadlines")
        self._own_deadlines = deadlines is None
        self._rejoined_callbacks: list[Callable[[str], None]] = []
        self._rejoin_failed_callbacks: list[Callable[[str, SMCPError], None]] = []
        self._refusal: Any = None
        self._made_patched = stdlib_patched()
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): fresh locks, no pending request (their
        callers are the parent's threads), and a session the parent had is left to it:
        the socket's copy here is closed without a byte written (`release_in_child`)."""
        self._emit_lock = threading.Lock()
        self._state_changed = threading.Condition()
        self._pending = set()
        if self._state != self._DISCONNECTED:
            self._state, self._ready, self._office_id = self._FORKED, False, None
            release_in_child(self._sio)

    def _new_client(self) -> PooledClient:
        """A fresh client per `connect`: the previous one may still be winding down on a
        library thread after a server-initiated disconnect, and its late events must not
        touch this connection's state (hence the `client is self._sio` checks)."""
        client = new_client(
            self._pool, DEFAULT_CONNECT_TIMEOUT, handle_sigint=False, **self._reconnect.client_options()
        )
        client.on("connect", lambda: self._on_connect(client), namespace=events.NAMESPACE)
        client.on("disconnect", lambda reason="": self._on_disconnect(client, reason), namespace=events.NAMESPACE)
        client.on("connect_error", lambda data=None: self._on_connect_error(client, data), namespace=events.NAMESPACE)
        for event, handler in self._handlers.items():
            client.on(event, handler, namespace=events.NAMESPACE)
        return client

    # -- state -----------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        with self._state_changed:
            return self._state == self._CONNECTED

    @property
    def url(self) -> str | None:
        return self._url

    @property
    def office_id(self) -> str | None:
        """The office this connection is in (and re-joins after a reconnect)."""
        return self._office_id

    @property
    def max_message_length(self) -> int | None:
        """The longest message (in characters) the Server accepts, as it announced it on
        connecting; longer requests and answers are refused here (`message_limit`)."""
        ws = announced(self._sio)
        return ws.max_message_length if ws is not None else None

    @property
    def peer_extensions(self) -> frozenset[str]:
        """The smcp_sync extension requests the Server said it routes when connecting
        (none for an official SDK's Server: `protocol.extensions`)."""
        ws = announced(self._sio)
        return ws.peer_extensions if ws is not None else frozenset()

    @property
    def sid(self) -> str | None:
        """The current Socket.IO session id on `/smcp` (changes on every reconnect)."""
        sid: str | None = self._sio.get_sid(events.NAMESPACE)
        return sid

    def __repr__(self) -> str:
        return f"<Connection {self.role} {self.name!r} {self._state} url={self._url and redact_url(self._url)!r} office={self._office_id!r}>"

    # -- lifecycle -------------------------------------------------------------------

    def connect(self, url: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        """Open the session, declaring in the URL's query our protocol version and the
        smcp_sync extension requests this client has handlers for (`on`). Raises `AuthError` when the Server refuses the
        connection (its message included), `VersionMismatchError` (4008) when it speaks
        another protocol version, `NotConnectedError` when it cannot be reached,
        `ValueError` for a `url` that is not an http(s) or ws(s) URL, and
        `MadeBeforePatchingError` when made before gevent patched the standard library."""
        _require_server_url(url)
        require_same_threading(self._made_patched, f"the {self.role} {self.name!r}")
        with self._state_changed:
            if self._state not in (self._DISCONNECTED, self._FORKED):
                raise RuntimeError(f"{self.name!r} is already {self._state} to {redact_url(self._url or '')}; close() it first")
            self._state = self._CONNECTING
            self._closing = False
            self._refusal = None
            self._url = url
            self._sio = client = self._new_client()
        bound_handshake(client, timeout)
        try:
            client.connect(
                handshake_url(url, self._handshake_query()),
                headers=self._headers,
                auth=self._auth.for_client(),
                transports=["websocket"],
                namespaces=[events.NAMESPACE],
                wait_timeout=timeout,
            )
        except socketio.exceptions.ConnectionError as exc:
            with self._state_changed:
                self._state = self._DISCONNECTED
            self._retire_pool(DEFAULT_CLOSE_TIMEOUT)
            shown = redact_url(url)  # errors are logged and printed: a key in the URL's query stays here
            if self._auth.failure is not None:
                raise AuthError(f"cannot connect to {shown}: {self._auth.failure}") from None
            raise self._connect_failure(shown, exc) from None
        logger.info("%s %r connected to %s (sid %s)", self.role, self.name, url, self.sid)

    def _handshake_query(self) -> list[tuple[str, str]]:
        answered = extensions.EXTENSION_REQUESTS & self._handlers.keys()
        return [(extensions.QUERY_KEY, extensions.query_value(answered))] if answered else []

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT, on_disconnected: Callable[[], None] | None = None) -> None:
        """Disconnect (the Server treats it as leaving the office), stop reconnecting and
        wait up to `timeout` for the client's threads. Idempotent; `connect` may follow
        (with a fresh handler pool).

        `on_disconnected` runs once the session is gone and before the handlers still
        running are waited for: the owner ends their work there (the Computer stops its
        MCP servers), so closing need not wait for it, and no answer goes out after the
        Server has already failed the requests of a session that left."""
        deadline = time.monotonic() + timeout
        with self._state_changed:
            self._closing = True
            inherited = self._state == self._FORKED  # the parent's session: nothing to stop here
            self._state_changed.notify_all()  # a re-join pausing between attempts ends
        if not inherited:
            closer = threading.Thread(target=self._shutdown, name=f"smcp-close-{self.name}", daemon=True)
            closer.start()
            closer.join(timeout * CUT_AFTER_SHARE)
            if closer.is_alive():  # a teardown race in the libraries left a thread waiting
                logger.info("%r: cutting the transport, its threads did not stop by themselves", self)
                cut_transport(self._sio)
                closer.join(max(0.0, deadline - time.monotonic()))
            if closer.is_alive():
                logger.warning("%r: client threads still stopping after %.1fs", self, timeout)
        if on_disconnected is not None:
            on_disconnected()
        self._retire_pool(max(0.0, deadline - time.monotonic()))
        if self._own_deadlines:
            self._deadlines.shutdown(max(0.0, deadline - time.monotonic()))
        with self._state_changed:
            self._state, self._ready, self._office_id = self._DISCONNECTED, False, None
            self._state_changed.notify_all()

    def _retire_pool(self, timeout: float) -> None:
        """Stop the handler pool's threads; the next `connect` gets a fresh pool."""
        with self._state_changed:
            pool, self._pool = self._pool, WorkerPool(f"smcp-{self.role}-worker")
        pool.shutdown(timeout)

    def _shutdown(self) -> None:
        """Stop the client and any reconnect task, for good.

        python-socketio's own `shutdown()` races a transport drop being handled: the drop
        decides to reconnect, marks the client disconnected, then starts the reconnect
        task; a `shutdown()` in between finds neither a connection nor a task and does
        nothing, and the task then retries forever (measured: about one close in ten
        right after a Server went away). A `shutdown()` that sets the task's abort flag
        before the task clears it waits forever. So: no new decisions to reconnect, let a
        drop being handled finish (the Engine.IO read loop decides), and set the abort
        flag until the task has ended. A reconnect attempt in flight may succeed
        meanwhile: then disconnect again.
        """
        client = self._sio
        client.reconnection = False
        deadline = time.monotonic() + DEFAULT_CLOSE_TIMEOUT
        while True:
            if transport_connected(client):
                client.disconnect()
            reader = read_loop(client)
            if reader is not None and reader is not threading.current_thread():
                reader.join(max(0.0, deadline - time.monotonic()))
            task = reconnect_task(client)
            if (task is None or not task.is_alive()) and not transport_connected(client):
                return
            if time.monotonic() >= deadline:
                return  # `close` reports the threads still running
            if task is not None:
                abort_reconnect(client)
                task.join(_RECONNECT_ABORT_POLL)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- office ----------------------------------------------------------------------

    def join_office(self, office_id: str, timeout: float = DEFAULT_JOIN_TIMEOUT) -> None:
        """Join `office_id` as this connection's role and name; a refusal raises the
        `SMCPError` matching the code in the Server's message (403 when it has none)."""
        self._join(office_id, timeout, wait_for_rejoin=True)
        logger.info("%s %r joined office %r", self.role, self.name, office_id)

    def leave_office(self, timeout: float = DEFAULT_JOIN_TIMEOUT) -> None:
        """Leave the current office (no-op when in none)."""
        office_id = self._office_id
        if office_id is None:
            return
        answer = self._call(events.LEAVE_OFFICE, to_wire(LeaveOfficeReq(office_id=office_id)), timeout, wait_for_rejoin=True)
        _raise_refusal(events.LEAVE_OFFICE, answer)
        with self._state_changed:
            if self._office_id == office_id:
                self._office_id = None

    def on_rejoined(self, callback: Callable[[str], None]) -> None:
        """Call `callback(office_id)` after each automatic re-join (on a Socket.IO thread:
        keep it short, hand long work to another thread)."""
        self._rejoined_callbacks.append(callback)

    def on_rejoin_failed(self, callback: Callable[[str, SMCPError], None]) -> None:
        """Call `callback(office_id, error)` when an automatic re-join is given up
        (refused for good, or still refused after `rejoin.RejoinPolicy.give_up_after`):
        the connection stays connected, in no office (on a Socket.IO thread)."""
        self._rejoin_failed_callbacks.append(callback)

    def _join(self, office_id: str, timeout: float, *, wait_for_rejoin: bool) -> None:
        request = EnterOfficeReq(role=self.role, name=self.name, office_id=office_id)
        answer = self._call(events.JOIN_OFFICE, to_wire(request), timeout, wait_for_rejoin=wait_for_rejoin)
        _raise_refusal(events.JOIN_OFFICE, answer)
        with self._state_changed:
            self._office_id = office_id

    # -- messages --------------------------------------------------------------------

    def call(self, event: str, payload: Any, timeout: float) -> Any:
        """Send `event` and return the answer. Raises the typed `SMCPError` when the
        answer is an error object (nested or flat), `SMCPTimeoutError` (408) when none
        comes within `timeout` seconds, `NotConnectedError` without a session."""
        return self._call(event, payload, timeout, wait_for_rejoin=True)

    def request(self, event: str, payload: Any, timeout: float, on_settled: Settled) -> PendingRequest:
        """Send `event` without waiting: `on_settled(answer, error)` is called once with
        what `call` would return or raise (`error` None for an answer), on the thread that
        settles the request: the Socket.IO reader's for an answer, this connection's
        `Deadlines` for a timeout, the one handling a disconnect, or this one when it fails
        before it is sent (not connected, a message too long). So it must not block. Like
        `call`, it first waits (within `timeout`) for a re-join under way. The returned
        `PendingRequest` may be `cancel`led. `payload` is JSON values only (no bytes: the
        relay's, read from JSON; `socketio_parts.PooledClient.emit_json`)."""
        return self._request(event, payload, timeout, on_settled, wait_for_rejoin=True, expires=True, json_only=True)

    def _call(self, event: str, payload: Any, timeout: float, *, wait_for_rejoin: bool) -> Any:
        """`request`, waited for on this thread (its own clock: no `Deadlines` entry).
        Whatever else ends the wait (an interrupt) cancels the request."""
        answered = threading.Event()
        pending = self._request(
            event, payload, timeout, lambda answer, error: answered.set(), wait_for_rejoin=wait_for_rejoin, expires=False
        )
        try:
            if not wait_event(answered, pending.deadline - time.monotonic()):
                pending.expire()  # settled as a timeout, unless the answer won the race
        except BaseException:
            pending.cancel()
            raise
        return pending.outcome()

    def emit(self, event: str, payload: Any, timeout: float = DEFAULT_EMIT_TIMEOUT) -> None:
        """Send `event` without waiting for an answer (for another message being written
        at most `timeout` seconds)."""
        with self._state_changed:
            if self._state != self._CONNECTED:
                raise self._not_connected(f"cannot send {event}")
        self._send(event, payload, callback=None, timeout=timeout)

    def on(self, event: str, handler: Handler) -> None:
        """Handle `event` from the Server: `handler(payload)` runs on its own thread and
        its return value is the answer. It validates its own payload."""
        self._register(event, _answering(event, handler))

    def on_deferred(self, event: str, handler: DeferredHandler) -> None:
        """Handle `event` without a thread waiting for its answer: `handler(payload, reply)`
        runs on the thread reading the socket and must not block; it starts the work and
        has `reply(produce)` called once, from any thread, when the work is done: what
        `produce()` returns is the answer (an error it raises becomes one, as with `on`),
        written without waiting for the socket (`socketio_parts.Deferred`). An error the
        handler raises is the answer too (then it must not reply)."""
        self._register(event, Deferred(_answering_later(event, handler)))

    def _register(self, event: str, handler: Callable[..., Any]) -> None:
        if event in events.RESERVED_EVENT_NAMES:
            raise ValueError(f"{event!r} is handled by the connection itself")
        self._handlers[event] = handler
        self._sio.on(event, handler, namespace=events.NAMESPACE)

    def _request(
        self, event: str, payload: Any, timeout: float, on_settled: Settled, *, wait_for_rejoin: bool, expires: bool,
        json_only: bool = False,
    ) -> PendingRequest:
        """The one way a request goes out (`call` and `request`): registered as pending
        (a disconnect fails it), expired by `Deadlines` when `expires`, then written
        (`json_only`: a payload of JSON values, `_send`)."""
        pending = PendingRequest(self, event, timeout, on_settled)
        try:
            with self._state_changed:
                self._wait_usable(event, pending.deadline, wait_for_rejoin)
                self._pending.add(pending)
        except SMCPError as error:
            pending.error = error
            pending.tell()
            return pending
        if expires:
            pending.timer = self._deadlines.call_at(pending.deadline, pending.expire)
        try:
            self._send(event, payload, pending.answered, pending.deadline - time.monotonic(), json_only=json_only)
        except SMCPError as error:
            self._settle(pending, None, error)
        except BaseException:  # not a request's failure (a payload JSON cannot encode): the caller's
            pending.cancel()
            raise
        return pending

    def _settle(self, pending: PendingRequest, answer: Any, error: SMCPError | None, *, tell: bool = True) -> bool:
        """Settle `pending` if nothing did before (under the state lock, which a disconnect
        takes to fail the pending requests); False if something did."""
        with self._state_changed:
            if pending not in self._pending:
                return False
            self._pending.discard(pending)
            pending.answer, pending.error = answer, error
        if tell:
            pending.tell()
        elif pending.timer is not None:
            pending.timer.cancel()
        return True

    def _wait_usable(self, event: str, deadline: float, wait_for_rejoin: bool) -> None:
        """Block (state lock held) until requests may be sent; joins skip the re-join wait."""
        while True:
            if self._state in (self._DISCONNECTED, self._CONNECTING, self._FORKED):
                raise self._not_connected(f"cannot send {event}")
            if self._state == self._CONNECTED and (self._ready or not wait_for_rejoin):
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise NotConnectedError(
                    f"cannot send {event}: connection to {self._url} lost and not restored in time",
                    details={"event": event},
                )
            self._state_changed.wait(remaining)

    def _send(
        self, event: str, payload: Any, callback: Callable[..., None] | None, timeout: float, *, json_only: bool = False
    ) -> None:
        """Write the message (on this thread: `socketio_parts.PooledEngineIOClient`), after the one another
        thread is writing; waiting for that is bounded by `timeout` (408). A message longer
        than the Server accepts is refused with a 400 instead (`socketio_parts.PooledClient`).
        `json_only`: a payload of JSON values with a callback (`request`), written by `emit_json`."""
        if not self._emit_lock.acquire(timeout=max(0.0, timeout)):
            raise SMCPTimeoutError(
                f"could not send {event} within {timeout:g}s: the connection is still writing another message",
                details={"event": event, "timeout": timeout},
            )
        try:
            if json_only and callback is not None:
                self._sio.emit_json(event, payload, events.NAMESPACE, callback)
            else:
                self._sio.emit(event, payload, namespace=events.NAMESPACE, callback=callback)
        except socketio.exceptions.BadNamespaceError:
            raise self._not_connected(f"cannot send {event}") from None
        finally:
            self._emit_lock.release()

    def _not_connected(self, what: str) -> NotConnectedError:
        if self._state == self._FORKED:
            return ForkedConnectionError(
                f"{what}: {self.role} {self.name!r} was connected to {self._url} before os.fork(), and that "
                f"session belongs to process {parent_pid()}; connect in the child process instead (gunicorn: "
                "the post_fork hook; Celery: the worker_process_init signal; multiprocessing: the 'spawn' "
                "start method or the target function)",
                details={"parent_pid": parent_pid()},
            )
        where = f" to {self._url}" if self._url else ""
        return NotConnectedError(f"{what}: {self.role} {self.name!r} is not connected{where}")

    # -- Socket.IO callbacks (each on a library thread) ---------------------------------

    def _on_connect(self, client: socketio.Client) -> None:
        with self._state_changed:
            if client is not self._sio:
                return
            reconnected = self._state == self._RECONNECTING
            self._state = self._CONNECTED
            office_id = self._office_id if reconnected and not self._closing else None
            self._ready = office_id is None
            self._state_changed.notify_all()
        if office_id is not None:
            self._rejoin(office_id)

    def _rejoin(self, office_id: str) -> None:
        """Join `office_id` again; a refusal that may lift (`rejoin`) is retried with a
        growing pause. The outcome is logged and told to `on_rejoined` or
        `on_rejoin_failed`."""
        logger.info("%s %r reconnected (sid %s); re-joining office %r", self.role, self.name, self.sid, office_id)
        pauses, attempts = REJOIN.pauses(), 1
        while True:
            try:
                self._join(office_id, DEFAULT_JOIN_TIMEOUT, wait_for_rejoin=False)
                break
            except NotConnectedError:
                return  # dropped again: the next reconnect re-joins
            except SMCPError as exc:
                pause = next(pauses, None) if exc.code in RETRIED_CODES else None
                if pause is None:
                    self._rejoin_failed(office_id, exc, attempts)
                    return
                if not self._still_connected_after(pause):
                    return  # dropped or closing: the next reconnect (if any) re-joins
                attempts += 1
        if attempts > 1:
            logger.info("%s %r re-joined office %r at attempt %d", self.role, self.name, office_id, attempts)
        self._set_ready()
        for callback in list(self._rejoined_callbacks):
            try:
                callback(office_id)
            except Exception:
                logger.exception("on_rejoined callback %r failed", callback)

    def _still_connected_after(self, pause: float) -> bool:
        """Wait `pause` seconds; False if the connection dropped or is closing meanwhile."""
        with self._state_changed:
            self._state_changed.wait_for(lambda: self._closing or self._state != self._CONNECTED, pause)
            return not self._closing and self._state == self._CONNECTED

    def _rejoin_failed(self, office_id: str, error: SMCPError, attempts: int) -> None:
        with self._state_changed:
            if self._office_id == office_id:
                self._office_id = None
        # said before the requests waiting for the re-join go on, so what they see follows it
        logger.error(
            "%s %r could not re-join office %r after reconnecting (%d attempts): %s; connected, in no office",
            self.role, self.name, office_id, attempts, error,
        )  # fmt: skip
        self._set_ready()
        for callback in list(self._rejoin_failed_callbacks):
            try:
                callback(office_id, error)
            except Exception:
                logger.exception("on_rejoin_failed callback %r failed", callback)

    def _set_ready(self) -> None:
        with self._state_changed:
            self._ready = True
            self._state_changed.notify_all()

    def _on_disconnect(self, client: socketio.Client, reason: str) -> None:
        with self._state_changed:
            if client is not self._sio:
                return
            retry = reason == client.reason.TRANSPORT_ERROR and self._reconnect.enabled and not self._closing
            self._state = self._RECONNECTING if retry else self._DISCONNECTED
            self._ready = False
            if not retry:
                self._office_id = None
            pending, self._pending = self._pending, set()
            for request in pending:
                request.error = NotConnectedError(f"connection lost before {request.event} was answered ({reason})")
            self._state_changed.notify_all()
        logger.log(
            logging.INFO if self._closing else logging.WARNING,
            "%s %r disconnected from %s (%s)%s",
            self.role,
            self.name,
            self._url,
            reason or "unknown reason",
            "; reconnecting" if retry else "",
        )
        for request in pending:
            request.tell()

    def _on_connect_error(self, client: socketio.Client, data: Any) -> None:
        # A refusal of the namespace carries {"message", "data"?}; one of the handshake
        # (HTTP 400: `protocol.versioning`) the flat error payload; a transport failure a string.
        refused = isinstance(data, Mapping)
        if refused and client is self._sio:
            self._refusal = data
            if refusal_error(data, self._url or "") is not None:
                self._stop_reconnecting(client)
        # WARNING only where no caller hears of it: a first connect() raises the refusal
        reconnecting = self._state == self._RECONNECTING
        level = logging.WARNING if refused and reconnecting else logging.INFO
        logger.log(level, "%s %r: cannot connect to %s: %s", self.role, self.name, self._url, data)

    def _stop_reconnecting(self, client: socketio.Client) -> None:
        """A Server that refuses our handshake (its version is not ours) will refuse every
        retry: reconnecting after a drop ends here, as the spec asks (no silent retries)."""
        with self._state_changed:
            if self._state != self._RECONNECTING:
                return  # a first connect: it raises the refusal itself
            self._state, self._ready, self._office_id = self._DISCONNECTED, False, None
            self._state_changed.notify_all()
        client.reconnection = False
        abort_reconnect(client)
        logger.error("%s %r stops reconnecting: %s", self.role, self.name, refusal_error(self._refusal, self._url or ""))

    def _connect_failure(self, url: str, exc: Exception) -> SMCPError:
        refusal = self._refusal
        handshake = refusal_error(refusal, url)
        if handshake is not None:
            return handshake
        if isinstance(exc.__cause__, engineio.exceptions.ConnectionError) or refusal is None:
            return NotConnectedError(f"cannot connect to {url}: {redact_text(str(exc))}", details={"url": url})
        error = SMCPError.from_wire(refusal.get("data")) or SMCPError.from_wire(refusal)
        if error is not None:
            return error
        message = str(refusal.get("message") or "no reason given")
        if message.startswith("["):  # "[code] message", as in join refusals
            return error_from_ack(message)
        return AuthError(f"connection refused by {url}: {message}")


def _require_server_url(url: str) -> None:
    """Refuse what python-socketio would reject with a bare "hostname is invalid"."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in _URL_SCHEMES or not parts.hostname:
        raise ValueError(f"url must be a Server URL with a scheme, e.g. http://localhost:8000, not {url!r}")


def _raise_refusal(event: str, answer: Any) -> None:
    """Check a two-value ack `[True, None]` / `[False, "[code] message"]`."""
    values = answer if isinstance(answer, list) else [answer]
    accepted = values[0] if values else None
    if accepted is True:
        return
    if accepted is False:
        raise error_from_ack(values[1] if len(values) > 1 else None)
    error = SMCPError.from_wire(accepted)
    if error is not None:
        raise error
    raise InternalError(f"unexpected answer to {event}: {answer!r:.200}")


def _answering(event: str, handler: Handler) -> Callable[..., Any]:
    """`handler` adapted to python-socketio: one payload in, errors turned into answers (an
    answer longer than the Server accepts is replaced by `socketio_parts.PooledClient`)."""

    def invoke(*args: Any) -> Any:
        return _answer_of(event, lambda: handler(args[0] if args else None))

    return invoke


def _answering_later(
    event: str, handler: DeferredHandler
) -> Callable[[tuple[Any, ...], Callable[[Any], None]], None]:
    """`handler` adapted to `socketio_parts.Deferred`, with errors turned into answers."""

    def start(args: tuple[Any, ...], answer: Callable[[Any], None]) -> None:
        def reply(produce: Callable[[], Any]) -> None:
            answer(_answer_of(event, produce))

        refusal = _answer_of(event, lambda: handler(args[0] if args else None, reply))
        if refusal is not None:
            answer(refusal)

    return start


def _answer_of(event: str, produce: Callable[[], Any]) -> Any:
    """What `produce()` returns, or the error object for what it raised (logged; no stack
    trace on the wire)."""
    try:
        return produce()
    except SMCPError as exc:
        logger.info("%s refused: %s", event, exc)
        return exc.to_wire()
    except Exception:
        logger.exception("handler of %s failed", event)
        return InternalError(f"internal error while handling {event}").to_wire()
