"""How many idle authenticated connections one Server process holds, and what they cost.

For each server and each level N: a fresh Server process; its idle RSS; a probe (one
Agent in an office of its own, asking `server:list_room` one request at a time: a
round trip through the Server and back, no Computer) sampled unloaded; then N idle
connections from `idle_sockets.py` processes (a light asyncio client, at most
`PER_HOLDER` connections each), authenticated with the key; the time until all are
connected; the Server's RSS and threads once settled; the probe again, sampled over
`probe_seconds` (a full Engine.IO ping cycle, 25 s, in the full plan: every idle
connection is pinged once meanwhile); connections the Server dropped by the end.

Servers: ours `start()` (werkzeug threads), `serve()` (gunicorn gthread, `threads` set
to N + 100; its websockets read by one reactor thread) and `serve(mode="gevent")`
(gunicorn's gevent worker), and the official a2c-smcp 0.4.2 Server (its stock async
Server, python-socketio's AsyncServer under uvicorn:
`tests/interop/scripts/official_server.py --asgi`). `start()` is not run past
`threaded_max` connections: it holds two threads per idle connection (a websocket's
inline reads and Engine.IO's writer), and each thread a stack mapping; the machine's
`kernel.pid_max` and `vm.max_map_count` and the other engineers' CPU are the limit
there, not the Server's code.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any, Callable

import psutil
import websocket

from smcp_sync.connection.client_auth import key_auth
from smcp_sync.protocol.versioning import handshake_url

from . import memory
from .processes import READY_TIMEOUT, Peers

KEY = "capacity-key"
NAMESPACE = "/smcp"
#: Idle connections per `idle_sockets` process (each holds one file descriptor apiece).
PER_HOLDER = 5000
#: Seconds N connections may take to connect, per thousand.
CONNECT_SECONDS_PER_THOUSAND = 60.0
#: Seconds one probe request may take.
PROBE_TIMEOUT = 30.0
SERVERS = ("start", "serve_threads", "serve_gevent", "official_042")
LABELS = {
    "start": "smcp_sync start() (werkzeug threads)",
    "serve_threads": "smcp_sync serve() threads (gthread)",
    "serve_gevent": "smcp_sync serve() gevent",
    "official_042": "official 0.4.2 (AsyncServer, uvicorn)",
}


@dataclasses.dataclass(frozen=True)
class CapacityPlan:
    levels: tuple[int, ...] = (1000, 3000, 10_000)
    servers: tuple[str, ...] = SERVERS
    #: Levels above this are not run for `start()` (see the module docstring).
    threaded_max: int = 3000
    unloaded_seconds: float = 30.0
    probe_seconds: float = 30.0
    probe_interval: float = 0.02

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Probe:
    """One Agent on a raw websocket (websocket-client), joined to an office of its own."""

    def __init__(self, url: str) -> None:
        address = handshake_url(url.replace("http://", "ws://", 1) + "/socket.io/?EIO=4&transport=websocket")
        self._ws = websocket.create_connection(address, timeout=PROBE_TIMEOUT)
        self._next_id = 0
        if not self._receive().startswith("0{"):
            raise ConnectionError("no Engine.IO open packet")
        self._ws.send(f"40{NAMESPACE}," + json.dumps(key_auth(KEY)))
        answer = self._receive()
        if not answer.startswith(f"40{NAMESPACE},"):
            raise ConnectionError(f"the probe was refused: {answer[:200]}")
        joined = self.ask("server:join_office", {"role": "agent", "name": "probe", "office_id": "capacity-probe"})
        if joined[0] is not True:
            raise ConnectionError(f"the probe could not join its office: {joined}")

    def ask(self, event: str, payload: Any) -> Any:
        self._next_id += 1
        self._ws.send(f"42{NAMESPACE},{self._next_id}" + json.dumps([event, payload]))
        expected = f"43{NAMESPACE},{self._next_id}"
        while True:
            frame = self._receive()
            if frame.startswith(expected):
                return json.loads(frame[len(expected) :])

    def samples(self, seconds: float, interval: float) -> list[float]:
        """Round trips of `server:list_room` in ms, one every `interval` s for `seconds`."""
        times = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.perf_counter()
            answer = self.ask("server:list_room", {"agent": "probe", "req_id": str(len(times)), "office_id": "capacity-probe"})
            times.append((time.perf_counter() - started) * 1000)
            if not isinstance(answer, list) or not answer or "sessions" not in answer[0]:
                raise RuntimeError(f"list_room answered {answer!r:.200}")
            time.sleep(interval)
        return times

    def close(self) -> None:
        self._ws.close()

    def _receive(self) -> str:
        """The next Socket.IO frame; Engine.IO pings are answered on the way."""
        while True:
            frame = self._ws.recv()
            if frame == "2":
                self._ws.send("3")
                continue
            return str(frame)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def start_server(
    peers: Peers, server: str, connections: int, official_python: Callable[[], Any], key: str = KEY
) -> tuple[str, psutil.Process]:
    """Server `server` (one of `SERVERS`) in a child process, taking `key`, ready for
    `connections` clients: its URL and the process that serves (a `serve()` worker, not
    its master)."""
    if server == "official_042":
        return _start_official(peers, official_python(), key)
    options = json.dumps({"auth": key, "max_connections_per_ip": None})
    if server == "start":
        ready = peers.start("smcp-server", "--options", options)
        return ready["url"], psutil.Process(ready["pid"])
    mode = "gevent" if server == "serve_gevent" else "threads"
    spare = str(connections + 100)
    ready = peers.start("smcp-serve", "--mode", mode, "--threads", spare, "--connections", spare, "--options", options)
    master = psutil.Process(ready["pid"])
    deadline = time.monotonic() + READY_TIMEOUT
    while not master.children() and time.monotonic() < deadline:
        time.sleep(0.1)  # the worker is forked after the ready line; no event to wait on
    return ready["url"], master.children()[0]


def _start_official(peers: Peers, python: Any, key: str) -> tuple[str, psutil.Process]:
    from tests.interop.harness import SCRIPTS

    argv = [str(python), str(SCRIPTS / "official_server.py"), "--port", "0", "--api-key", key, "--no-trace", "--asgi"]
    child = peers.spawn(argv, "official-server-asgi")
    listening = child.wait_for("listening", READY_TIMEOUT)
    return listening["url"], psutil.Process(child.proc.pid)


def one_point(server: str, level: int, plan: CapacityPlan, official_python: Callable[[], Any]) -> dict[str, Any]:
    """One server process, `level` idle connections: the row's measurements."""
    with Peers() as peers:
        url, process = start_server(peers, server, level, official_python)
        baseline = memory.settled(process)
        probe = Probe(url)
        try:
            unloaded = probe.samples(plan.unloaded_seconds, plan.probe_interval)
            holders = []
            for start in range(0, level, PER_HOLDER):
                count = min(PER_HOLDER, level - start)
                argv = [sys.executable, "-m", "benchmarks.idle_sockets", "--url", url, "--count", str(count), "--key", KEY]
                holders.append(peers.spawn(argv, f"idle-sockets-{start}"))
            timeout = CONNECT_SECONDS_PER_THOUSAND * max(1, level / 1000)
            ready = [holder.wait_for("ready", timeout) for holder in holders]
            loaded_at = memory.settled(process)
            loaded = probe.samples(plan.probe_seconds, plan.probe_interval)
            after = memory.sample(process)
        finally:
            probe.close()
        for holder in holders:
            holder.close_stdin()
        lost = sum(holder.wait_for("closed", 60)["lost"] for holder in holders)
    connected = sum(r["connected"] for r in ready)
    return {
        "server": server,
        "connections": level,
        "connected": connected,
        "failed": sum(r["failed"] for r in ready),
        "errors": [r["errors"] for r in ready if r["errors"]],
        "connect_s": max(r["connect_s"] for r in ready),
        "baseline": baseline,
        "loaded": loaded_at,
        "after_probe": after,
        "kb_per_connection": (loaded_at["rss_mb"] - baseline["rss_mb"]) * 1024 / max(1, connected),
        "threads_per_connection": (loaded_at["threads"] - baseline["threads"]) / max(1, connected),
        "unloaded_ms": {"p50": percentile(unloaded, 0.5), "p99": percentile(unloaded, 0.99), "n": len(unloaded)},
        "loaded_ms": {"p50": percentile(loaded, 0.5), "p99": percentile(loaded, 0.99), "n": len(loaded)},
        "lost": lost,
    }


def run(plan: CapacityPlan, official_python: Callable[[], Any], log: Any) -> dict[str, Any]:
    """Every (server, level) point of `plan`, in level order; a point that fails is kept
    as its error and the others go on."""
    limit = memory.raise_fd_limit(max(plan.levels))
    rows = []
    for level in sorted(plan.levels):
        for server in plan.servers:
            if server == "start" and level > plan.threaded_max:
                continue
            log.info("capacity: %s, %d connections ...", server, level)
            started_load = psutil.getloadavg()[0]
            try:
                row = one_point(server, level, plan, official_python)
            except Exception as exc:
                log.exception("capacity: %s at %d failed", server, level)
                row = {"server": server, "connections": level, "error": f"{type(exc).__name__}: {exc}"}
            row["load"] = [started_load, psutil.getloadavg()[0]]
            rows.append(row)
    return {"plan": plan.to_dict(), "rows": rows, "fd_limit": list(limit)}
