"""The load of `routing_at_size.py`: per office, an Agent and a wire Computer, all from
one light asyncio process: ``python -m benchmarks.routing_load --url U --offices N
[--key K] [--prefix P]``.

Why not our Agent and Computer: thousands of them would measure the clients, and a
Computer's MCP server would add its own cost to every call. Here each connection is one
asyncio protocol speaking Engine.IO v4 over a websocket, framed by hand (a client frame
masked as RFC 6455 wants): a message sent and one received cost 4 µs, 29 µs with
wsproto, which matters with one core left for the load. The upgrade carries our
`a2c_version` in the query (the official 0.4.2 Server's gate wants one); then the OPEN
packet, a namespace CONNECT to /smcp with the key in every field a Server may read it
from, `server:join_office`. The Computer answers
each `client:tool_call` with a `CallToolResult` echoing `params.text`, on the spot; the
Agent has one call in flight: each answer (checked) sends the next call.

Prints ``{"event": "ready", "offices": n, "connect_s": s}`` once every office is
joined. Each stdin line ``{"run": {"warmup": W, "seconds": S}}`` starts the calls;
``{"event": "mark"}`` is printed when the measured window opens and again when it
closes (the driver reads the Server's CPU at each), then, once the calls in flight are
answered (at most `DRAIN_TIMEOUT` later), ``{"event": "result", ...}``: calls answered
within the window, calls/s, latency p50/p99 (ms), errors, calls still unanswered, and
this process's CPU seconds over the window (a load process that used a whole core was
the bound, not the Server). EOF on stdin closes every connection and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys
import time
from typing import Any, Callable
from urllib.parse import urlsplit

from smcp_sync.connection.client_auth import key_auth
from smcp_sync.protocol.versioning import handshake_url

from .idle_sockets import emit
from .loadgen import percentile
from .memory import raise_fd_limit

NAMESPACE = "/smcp"
#: Seconds one connection may take to be open, authenticated and joined.
JOIN_TIMEOUT = 120.0
#: Seconds the calls in flight at the window's end may take to be answered.
DRAIN_TIMEOUT = 60.0
#: The tool call's own timeout (seconds), as the Agent sends it.
CALL_TIMEOUT = 60
#: Connections being opened at once.
IN_FLIGHT = 200
EVENT = f"42{NAMESPACE},"
ACK = f"43{NAMESPACE},"


def frame(text: str) -> bytes:
    """One masked text frame (a client's frames must be masked)."""
    payload = text.encode()
    size = len(payload)
    if size < 126:
        header = bytes((0x81, 0x80 | size))
    elif size < 1 << 16:
        header = bytes((0x81, 0xFE)) + size.to_bytes(2, "big")
    else:
        header = bytes((0x81, 0xFF)) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    keys = (mask * (size // 4 + 1))[:size]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(size, "big")
    return header + mask + masked


class WireSocket(asyncio.Protocol):
    """One Engine.IO websocket: the upgrade, frames in and out, Engine.IO pings answered;
    every other text message goes to `on_text`."""

    def __init__(self, host: str, port: int, on_text: Callable[[str], None]) -> None:
        self._request = (
            f"GET {handshake_url('/socket.io/?EIO=4&transport=websocket')} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n\r\n"
        ).encode()
        self.on_text = on_text
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._buffer = bytearray()
        self._upgraded = False
        self._parts: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, text: str) -> None:
        assert self.transport is not None
        self.transport.write(frame(text))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        if not self._upgraded:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            if not buffer.startswith(b"HTTP/1.1 101"):  # refused: the member waiting sees it closed
                self.close()
                return
            self._upgraded = True
            del buffer[: end + 4]
        while len(buffer) >= 2:
            size, start = buffer[1] & 0x7F, 2
            if size == 126:
                if len(buffer) < 4:
                    return
                size, start = int.from_bytes(buffer[2:4], "big"), 4
            elif size == 127:
                if len(buffer) < 10:
                    return
                size, start = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < start + size:
                return
            first, payload = buffer[0], bytes(buffer[start : start + size])
            del buffer[: start + size]
            self._frame(first & 0x80, first & 0x0F, payload)

    def _frame(self, final: int, opcode: int, payload: bytes) -> None:
        if opcode == 0x9:  # ping: pong with its payload
            assert self.transport is not None
            self.transport.write(bytes((0x8A, 0x80 | len(payload))) + b"\0\0\0\0" + payload)
        elif opcode == 0x8:
            self.close()
        elif opcode in (0x0, 0x1):
            self._parts.append(payload)
            if final:
                text = b"".join(self._parts).decode()
                self._parts.clear()
                if text == "2":  # Engine.IO ping
                    self.send("3")
                else:
                    self.on_text(text)


class Member:
    """A wire client in one office: connects, authenticates and joins, waiting on each
    answer; afterwards `handle` takes every message."""

    def __init__(self, role: str, name: str, office: str) -> None:
        self.role, self.name, self.office = role, name, office
        self.socket: WireSocket | None = None
        self._waiting: asyncio.Future[str] | None = None

    async def join(self, host: str, port: int, key: str) -> None:
        loop = asyncio.get_running_loop()
        _, self.socket = await loop.create_connection(lambda: WireSocket(host, port, self._received), host, port)
        if not (await self._next()).startswith("0{"):
            raise ConnectionError("no Engine.IO open packet")
        self.socket.send(f"40{NAMESPACE}," + json.dumps(key_auth(key)))
        answer = await self._next()
        if not answer.startswith(f"40{NAMESPACE},"):
            raise ConnectionError(f"namespace connect refused: {answer[:120]!r}")
        self.socket.send(EVENT + "1" + json.dumps(["server:join_office", {"role": self.role, "name": self.name, "office_id": self.office}]))
        while not (answer := await self._next()).startswith(ACK + "1["):
            pass  # notifications of the office
        if json.loads(answer[len(ACK) + 1 :])[0] is not True:
            raise ConnectionError(f"join refused: {answer[:200]!r}")

    async def _next(self) -> str:
        assert self.socket is not None
        self._waiting = waiting = asyncio.get_running_loop().create_future()
        await asyncio.wait((waiting, self.socket.closed), return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            raise ConnectionError("closed by the Server")
        return waiting.result()

    def _received(self, text: str) -> None:
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_result(text)
        else:
            self.handle(text)

    def handle(self, text: str) -> None:
        """A message once joined (notifications are ignored)."""


class WireComputer(Member):
    """Answers every `client:tool_call` at once with the text it was given."""

    def handle(self, text: str) -> None:
        if not text.startswith(EVENT) or len(text) <= len(EVENT) or not text[len(EVENT)].isdigit():
            return  # a notification: nothing to answer
        body = text.index("[", len(EVENT))
        event, payload = json.loads(text[body:])[:2]
        if event == "client:tool_call":
            result = {"content": [{"type": "text", "text": payload["params"]["text"]}], "isError": False}
        else:
            result = {"code": 404, "message": f"{event} is not answered here"}
        assert self.socket is not None
        self.socket.send(ACK + text[len(EVENT) : body] + json.dumps([result]))


class Calls:
    """What every Agent's calls add up to: latencies of calls answered within the window."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        """A fresh count for the next run."""
        self.running = False
        self.window: tuple[float, float] = (float("inf"), float("inf"))
        self.latencies: list[float] = []
        self.errors = 0
        self.first_error: str | None = None
        self.drained = asyncio.Event()

    def answered(self, began: float, error: str | None) -> None:
        now = time.perf_counter()
        self.in_flight -= 1
        if error is not None:
            self.errors += 1
            self.first_error = self.first_error or error
        elif self.window[0] <= now <= self.window[1]:
            self.latencies.append(now - began)
        if not self.in_flight:
            self.drained.set()


class WireAgent(Member):
    """One tool call in flight: each answer sends the next while `calls.running`."""

    def __init__(self, index: int, office: str, calls: Calls, text: str) -> None:
        super().__init__("agent", f"agent-{index}", office)
        self._computer = f"pc-{index}"
        self._calls = calls
        self._text = text
        self._id = 1
        self._began = 0.0

    def call(self) -> None:
        self._id += 1
        request = {"agent": self.name, "req_id": f"{self.office}-{self._id}", "computer": self._computer, "tool_name": "echo"}
        request.update(params={"text": self._text}, timeout=CALL_TIMEOUT)
        self._calls.in_flight += 1
        self._began = time.perf_counter()
        assert self.socket is not None
        self.socket.send(EVENT + str(self._id) + json.dumps(["client:tool_call", request]))

    def handle(self, text: str) -> None:
        prefix = f"{ACK}{self._id}["
        if not text.startswith(prefix):
            return  # a notification
        self._calls.answered(self._began, self._error(json.loads(text[len(prefix) - 1 :])))
        if self._calls.running:
            self.call()

    def _error(self, answer: list[Any]) -> str | None:
        result = answer[0] if answer else None
        try:
            if result["isError"] or result["content"][0]["text"] != self._text:
                raise ValueError
        except (KeyError, IndexError, TypeError, ValueError):
            return f"unexpected answer: {json.dumps(answer)[:200]}"
        return None


async def run(url: str, offices: int, key: str, prefix: str, text: str) -> None:
    address = urlsplit(url)
    host, port = address.hostname or "127.0.0.1", address.port or 80
    calls = Calls()
    # names unique across offices too: the official Server refuses a name another office has
    computers = [WireComputer("computer", f"pc-{i}", f"{prefix}-{i}") for i in range(offices)]
    agents = [WireAgent(i, f"{prefix}-{i}", calls, text) for i in range(offices)]
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def join(member: Member) -> None:
        async with gate:
            await asyncio.wait_for(member.join(host, port, key), JOIN_TIMEOUT)

    started = time.monotonic()
    try:
        await asyncio.gather(*(join(member) for member in computers))  # each office's Computer before its Agent
        await asyncio.gather(*(join(member) for member in agents))
        emit({"event": "ready", "offices": offices, "connect_s": time.monotonic() - started})
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            plan = json.loads(line)["run"]
            emit({"event": "result", **await measure(agents, calls, plan["warmup"], plan["seconds"])})
    finally:
        for member in (*computers, *agents):
            if member.socket is not None:
                member.socket.close()


async def measure(agents: list[WireAgent], calls: Calls, warmup: float, seconds: float) -> dict[str, Any]:
    """Every Agent calling, one call in flight each, for `warmup` then `seconds` seconds."""
    calls.reset()
    calls.running = True
    for agent in agents:
        agent.call()
    await asyncio.sleep(warmup)
    opened, cpu = time.perf_counter(), time.process_time()
    calls.window = (opened, opened + seconds)
    emit({"event": "mark"})
    await asyncio.sleep(seconds)
    emit({"event": "mark"})
    cpu = time.process_time() - cpu
    calls.running = False
    with contextlib.suppress(asyncio.TimeoutError):  # counted as unanswered
        await asyncio.wait_for(calls.drained.wait(), DRAIN_TIMEOUT)
    ordered = sorted(calls.latencies)
    return {
        "calls": len(ordered),
        "calls_per_s": len(ordered) / seconds,
        "p50_ms": percentile(ordered, 50) * 1e3 if ordered else None,
        "p99_ms": percentile(ordered, 99) * 1e3 if ordered else None,
        "errors": calls.errors,
        "unanswered": calls.in_flight,
        "first_error": calls.first_error,
        "load_cpu_s": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--offices", type=int, required=True)
    parser.add_argument("--key", default="")
    parser.add_argument("--prefix", default="route")
    parser.add_argument("--text", default="ping")
    args = parser.parse_args()
    raise_fd_limit(2 * args.offices)
    asyncio.run(run(args.url, args.offices, args.key, args.prefix, args.text))


if __name__ == "__main__":
    main()
