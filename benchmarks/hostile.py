"""What hostile and careless clients can hold of a Server (issue 12), on loopback.

* how long one unauthenticated socket holds a worker slot of `serve()`: a websocket
  that never sends the Socket.IO CONNECT, and a connection that sent half a request line;
* how long a legitimate Agent takes to connect and join while `hostile` such sockets are
  kept open (each one the Server closes is opened again at once), under `serve()` with
  `threads` and with `more_threads` (its default), and under `start()`;
* the Server's RSS while Agents that stop reading flood it: each sends `calls` tool calls
  whose answers are `answer_kib` KiB, never reads, and is dropped past the send backlog.

Hostile sockets come from 127.0.0.2-5 (all loopback on Linux), a share each below the
per-address cap; the legitimate clients from 127.0.0.1. Every wait is bounded.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import selectors
import socket
import statistics
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import psutil
import socketio
import websocket
from smcp_sync.connection.session import ReconnectPolicy

from smcp_sync.agent import Agent
from smcp_sync.protocol import events
from smcp_sync.server.app import DEFAULT_SERVE_THREADS

from .processes import Peers

HOSTILE_SOURCES = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
#: A websocket upgrade request: the Server opens an Engine.IO session and waits for the
#: Socket.IO CONNECT, which never comes.
SILENT_WEBSOCKET = (
    b"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
HALF_REQUEST = b"GET /socket.io/?EIO=4&transport=pol"
#: Seconds any wait of this section may last.
BOUND = 90.0


@dataclasses.dataclass(frozen=True)
class HostilePlan:
    hostile: int = 200
    hold_samples: int = 20
    floods: int = 5
    calls: int = 400
    answer_kib: int = 256
    #: Threads of the `serve()` measured throughout (gunicorn's pool), and of a second one
    #: measured for the connect time (`SMCPServer.serve`'s default).
    threads: int = 100
    more_threads: int = DEFAULT_SERVE_THREADS
    #: SMCPServer options of the servers measured (the defaults unless set).
    server_options: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def run(plan: HostilePlan) -> dict[str, Any]:
    options = json.dumps(plan.server_options)
    with Peers() as peers:
        serve = peers.start("smcp-serve", "--options", options, "--threads", str(plan.threads))
        worker = _worker(serve["pid"])
        result: dict[str, Any] = {
            "hold": {
                "silent websocket": hold_times(serve["url"], SILENT_WEBSOCKET, plan.hold_samples),
                "half request line": hold_times(serve["url"], HALF_REQUEST, plan.hold_samples),
            },
            "connect": [],
        }
        more_threads = peers.start("smcp-serve", "--options", options, "--threads", str(plan.more_threads))
        start = peers.start("smcp-server")
        servers = (
            (f"serve(), {plan.threads} threads", serve["url"]),
            (f"serve(), {plan.more_threads} threads", more_threads["url"]),
            ("start()", start["url"]),
        )
        for server, url in servers:
            for hostile in (0, plan.hostile):
                result["connect"].append({"server": server, "hostile": hostile, **connect_while_hostile(url, hostile)})
        result["flood"] = flood(serve["url"], worker, plan)
    return result


def _worker(master_pid: int) -> psutil.Process:
    """gunicorn's worker: forked after the master printed its URL."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        children = psutil.Process(master_pid).children()
        if children:
            return children[0]
        time.sleep(0.1)
    raise TimeoutError("gunicorn started no worker")


def _open(url: str, source: str, request: bytes) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10, source_address=(source, 0))
    sock.sendall(request)
    sock.setblocking(False)
    return sock


def _closed(sock: socket.socket) -> bool:
    """Read what is there (a 101, a close frame); True once the Server has closed it."""
    try:
        while sock.recv(65536):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def hold_times(url: str, request: bytes, count: int) -> list[float | None]:
    """Seconds until the Server closes each of `count` sockets that sent `request` and
    then nothing (None: still open after `BOUND`)."""
    sources = itertools.cycle(HOSTILE_SOURCES)
    opened = {_open(url, next(sources), request): time.monotonic() for _ in range(count)}
    held: dict[socket.socket, float] = {}
    with selectors.DefaultSelector() as selector:
        for sock in opened:
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + BOUND
        while len(held) < count and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                sock = key.fileobj
                if _closed(sock):
                    held[sock] = time.monotonic() - opened[sock]
                    selector.unregister(sock)
    for sock in opened:
        sock.close()
    return [held.get(sock) for sock in opened]


class HostileCrowd:
    """`count` hostile sockets (half silent websockets, half half-sent requests) kept
    open: one thread opens again each socket the Server closes, until `stop()`."""

    def __init__(self, url: str, count: int) -> None:
        self.url = url
        self.reopened = 0
        self._selector = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._sources = itertools.cycle(HOSTILE_SOURCES)
        for index in range(count):
            self._add(SILENT_WEBSOCKET if index % 2 == 0 else HALF_REQUEST)
        self._thread = threading.Thread(target=self._keep, name="bench-hostile", daemon=True)
        self._thread.start()

    def _add(self, request: bytes) -> None:
        self._selector.register(_open(self.url, next(self._sources), request), selectors.EVENT_READ, request)

    def _keep(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.2):
                if _closed(key.fileobj):
                    self._selector.unregister(key.fileobj)
                    key.fileobj.close()
                    self._add(key.data)
                    self.reopened += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()
        self._selector.close()


def connect_while_hostile(url: str, hostile: int) -> dict[str, Any]:
    """Seconds a legitimate Agent takes to connect and join while `hostile` sockets are
    kept open."""
    crowd = HostileCrowd(url, hostile) if hostile else None
    agent = Agent(f"legitimate-{hostile}", reconnect=ReconnectPolicy(enabled=False))
    try:
        started = time.monotonic()
        agent.connect(url, timeout=BOUND)
        agent.join_office(f"legitimate-{hostile}", timeout=BOUND)
        seconds = time.monotonic() - started
    finally:
        agent.close()
        if crowd is not None:
            crowd.stop()
    return {"seconds": seconds, "reopened": crowd.reopened if crowd else 0}


class _Computer:
    """A python-socketio client joined to office 'flood' as Computer 'c1', answering every
    tool call with `answer`, and noting which Agents left the office."""

    def __init__(self, url: str, answer: dict[str, Any]) -> None:
        self._left: set[str] = set()
        self._changed = threading.Condition()
        self.client = socketio.Client(reconnection=False, handle_sigint=False)
        self.client.on(events.TOOL_CALL, lambda data: answer, namespace=events.NAMESPACE)
        self.client.on(events.LEAVE_OFFICE_NOTIFICATION, self._on_leave, namespace=events.NAMESPACE)
        self.client.connect(url, namespaces=[events.NAMESPACE], transports=["websocket"], wait_timeout=10)
        join = {"role": "computer", "name": "c1", "office_id": "flood"}
        self.client.call(events.JOIN_OFFICE, join, namespace=events.NAMESPACE, timeout=10)

    def _on_leave(self, data: Any) -> None:
        with self._changed:
            self._left.add(data.get("agent"))
            self._changed.notify_all()

    def wait_left(self, agent: str, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: agent in self._left, timeout)


def flood(url: str, server: psutil.Process, plan: HostilePlan) -> dict[str, Any]:
    """The Server's RSS through `plan.floods` Agents that each send `plan.calls` calls
    with big answers and never read."""
    answer = {"content": [{"type": "text", "text": "x" * (plan.answer_kib * 1024)}], "isError": False}
    computer = _Computer(url, answer)
    try:
        baseline = _rss_mb(server)
        rows = [_one_flood(url, server, computer, plan, index) for index in range(plan.floods)]
    finally:
        computer.client.disconnect()
    return {"baseline_mb": baseline, "floods": rows}


def _one_flood(url: str, server: psutil.Process, computer: _Computer, plan: HostilePlan, index: int) -> dict[str, Any]:
    name = f"careless-{index}"
    ws = _careless_agent(url, name)
    call = {"agent": name, "req_id": "r", "computer": "c1", "tool_name": "echo", "params": {}, "timeout": 60}
    started = time.monotonic()
    peak = _rss_mb(server)
    sent = 0
    try:
        for ack_id in range(2, plan.calls + 2):
            ws.send(f"42{events.NAMESPACE},{ack_id}" + json.dumps([events.TOOL_CALL, call]))
            sent += 1
            if ack_id % 25 == 0:
                peak = max(peak, _rss_mb(server))
    except (OSError, websocket.WebSocketException):  # dropped while sending
        pass
    dropped_after = None
    while time.monotonic() - started < BOUND:  # the Agent reads nothing meanwhile
        peak = max(peak, _rss_mb(server))
        if computer.wait_left(name, 0.2):
            dropped_after = time.monotonic() - started
            break
    ws.shutdown()
    time.sleep(1.0)  # answers still in flight reach the Server, which discards them
    return {"flood": index + 1, "sent": sent, "peak_mb": peak, "after_mb": _rss_mb(server), "dropped_after": dropped_after}


def _careless_agent(url: str, name: str) -> websocket.WebSocket:
    """An Agent on a raw websocket with a small receive buffer, joined to 'flood'."""
    parts = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.settimeout(10)
    sock.connect((parts.hostname, parts.port))
    ws = websocket.create_connection(
        url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket", socket=sock, timeout=10
    )
    ws.recv()  # Engine.IO open
    ws.send(f"40{events.NAMESPACE},{{}}")
    ws.recv()
    ws.send(f"42{events.NAMESPACE},1" + json.dumps([events.JOIN_OFFICE, {"role": "agent", "name": name, "office_id": "flood"}]))
    while not ws.recv().startswith(f"43{events.NAMESPACE},1"):
        pass
    return ws


def _rss_mb(proc: psutil.Process) -> float:
    return proc.memory_info().rss / 2**20


def summary(held: list[float | None]) -> dict[str, float | None]:
    done = [value for value in held if value is not None]
    return {
        "median": statistics.median(done) if done else None,
        "max": max(done) if done else None,
        "still_open": len(held) - len(done),
    }
