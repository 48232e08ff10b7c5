"""When the Server pings, and which thread answers the Server's own requests
(benchmarks/README.md, capacity: what each change did to a request's p99)."""

from __future__ import annotations

import logging
import statistics
import threading
import time
from typing import Any

import websocket

from smcp_sync.protocol import events
from smcp_sync.server import InMemoryRegistry
from smcp_sync.server.transport.engine import PING_JITTER
from smcp_sync.server import ServerLimits

from ..peers import Peer

PING_INTERVAL = 2.0
CLIENTS = 12


def _ping_intervals(url: str, pings: int) -> list[float]:
    """Seconds from one Engine.IO PING to the next on a websocket that answers each."""
    ws = _engineio_websocket(url)
    try:
        assert ws.recv().startswith("0{")
        ws.send(f"40{events.NAMESPACE},")
        assert ws.recv().startswith(f"40{events.NAMESPACE},")
        times = []
        while len(times) <= pings:
            if ws.recv() == "2":
                times.append(time.monotonic())
                ws.send("3")
        return [later - earlier for earlier, later in zip(times, times[1:])]
    finally:
        ws.close()


def test_clients_that_connected_together_are_pinged_apart_and_never_late(server_factory):
    """Each ping comes up to PING_JITTER × ping_interval early, at random, never later
    than the interval: a crowd is not pinged in one burst every cycle, and no client's
    wait for a ping (at most ping_interval + ping_timeout) grows."""
    server = server_factory(ping_interval=PING_INTERVAL, ping_timeout=5)
    intervals: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        measured = _ping_intervals(server.url, 2)
        with lock:
            intervals.extend(measured)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(intervals) == 2 * CLIENTS
    earliest = PING_INTERVAL * (1 - PING_JITTER)
    assert all(interval >= earliest - 0.15 for interval in intervals), intervals  # slack: a busy test machine
    assert statistics.median(intervals) < PING_INTERVAL, intervals  # early, not late, on the whole
    # without the jitter none would come more than a timer's slack early
    assert min(intervals) < PING_INTERVAL - 0.05, intervals


class _RecordingRegistry(InMemoryRegistry):
    """The in-memory registry, noting the thread each office listing runs on."""

    def __init__(self, in_process: bool) -> None:
        super().__init__()
        self.in_process = in_process
        self.threads: list[str] = []

    def members(self, office_id: str) -> Any:
        self.threads.append(threading.current_thread().name)
        return super().members(office_id)


def _list_room_threads(server_factory, registry: _RecordingRegistry) -> list[str]:
    server = server_factory(registry=registry)
    peer = Peer(server.url)
    try:
        assert peer.join("agent", "a1", "office-1") == (True, None)
        for n in range(3):
            answer = peer.call(events.LIST_ROOM, {"agent": "a1", "req_id": str(n), "office_id": "office-1"})
            assert [session["name"] for session in answer["sessions"]] == ["a1"]
    finally:
        peer.close()
    return registry.threads


def test_the_servers_own_requests_run_on_the_reading_thread_when_the_registry_is_in_process(server_factory):
    threads = _list_room_threads(server_factory, _RecordingRegistry(in_process=True))
    assert threads and not any(name.startswith("smcp-server-worker") for name in threads), threads


def test_a_registry_that_may_wait_on_io_keeps_the_servers_requests_on_the_handler_pool(server_factory):
    threads = _list_room_threads(server_factory, _RecordingRegistry(in_process=False))
    assert threads and all(name.startswith("smcp-server-worker") for name in threads), threads


def test_a_connect_under_way_when_the_handshake_deadline_passes_is_finished_not_cut_mid_way(server_factory, caplog):
    """The handshake deadline may pass while the session's namespace CONNECT is being
    handled (a busy Server): the connect completes, and the session stays. Cut mid-way,
    python-socketio's handler failed on the session's forgotten environment (KeyError,
    logged with its traceback)."""
    server = _slow_to_connect(server_factory(limits=ServerLimits(handshake_timeout=0.3)))
    ws = _engineio_websocket(server.url)
    try:
        assert ws.recv().startswith("0{")
        with caplog.at_level(logging.INFO):
            ws.send(f"40{events.NAMESPACE},")
            assert ws.recv().startswith(f"40{events.NAMESPACE},")  # connected
            time.sleep(0.8)  # past a second deadline: a connected session is never cut
            assert ws.connected and len(server.sio.eio.sockets) == 1
        assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text
        assert "handshake_timeout" not in caplog.text
    finally:
        ws.close()


def test_a_refused_connect_under_way_when_the_handshake_deadline_passes_is_closed_once_refused(server_factory, caplog):
    server = _slow_to_connect(server_factory(auth="right-key", limits=ServerLimits(handshake_timeout=0.3)))
    ws = _engineio_websocket(server.url)
    try:
        assert ws.recv().startswith("0{")
        with caplog.at_level(logging.INFO):
            ws.send(f"40{events.NAMESPACE}," + '{"token": "wrong-key"}')
            assert ws.recv().startswith(f"44{events.NAMESPACE},")  # refused
            deadline = time.monotonic() + 5
            while server.sio.eio.sockets and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not server.sio.eio.sockets  # the deadline, looked at again, closed it
        assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text
        assert "no namespace connect within 0.3 s (handshake_timeout)" in caplog.text
    finally:
        ws.close()


def _slow_to_connect(server: Any) -> Any:
    """`server`, handling each namespace CONNECT for 0.8 s (a busy Server), past its
    handshake deadline: the manager's first step of it (python-socketio 5.14 calls
    `connect` first, later versions `pre_connect`) waits before it goes on."""
    manager = server.sio.manager
    first_step = "pre_connect" if hasattr(manager, "pre_connect") else "connect"
    step = getattr(manager, first_step)

    def slow_step(*args: Any) -> Any:
        time.sleep(0.8)
        return step(*args)

    setattr(manager, first_step, slow_step)
    return server


def _engineio_websocket(url: str) -> websocket.WebSocket:
    return websocket.create_connection(url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket", timeout=10)
