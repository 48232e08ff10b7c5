"""Many idle authenticated Socket.IO connections from one light asyncio process:
``python -m benchmarks.idle_sockets --url U --count N [--key K] [--in-flight M]``.

Why not our Agent: an Agent is several threads; thousands of them would measure the
client machine, not the Server. Each connection here is one asyncio stream speaking
Engine.IO v4 over a websocket (frames by wsproto, already a dependency through
simple-websocket): the upgrade with our `a2c_version` in the query (the official 0.4.2
Server's gate wants one), the OPEN packet, a namespace CONNECT to /smcp with the key in
every field a Server may read it from, then nothing but answering the Server's pings.
At most `in_flight` connections are
being opened at once (a real crowd does not arrive in one instant either).

Prints one JSON line ``{"event": "ready", "connected": n, "failed": f, "connect_s": s,
"errors": {...}}`` once every connection is open or has failed, then holds them until
EOF on stdin, and prints ``{"event": "closed", "lost": n}`` (connections the Server
closed meanwhile) before it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import resource
import sys
import time
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Message, Ping, RejectConnection, Request, TextMessage

from smcp_sync.connection.client_auth import key_auth
from smcp_sync.protocol.versioning import handshake_url

NAMESPACE = "/smcp"
#: Seconds one connection may take to be open and authenticated.
CONNECT_TIMEOUT = 60.0
READ_SIZE = 4096


class IdleSocket:
    """One connection: open and authenticate (`open`), then answer pings (`hold`)."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port, self.key = host, port, key
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self._texts: collections.deque[str] = collections.deque()
        self._parts: list[str] = []

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        target = handshake_url("/socket.io/?EIO=4&transport=websocket")
        self.writer.write(self.ws.send(Request(host=f"{self.host}:{self.port}", target=target)))
        opened = await self._next_text()
        if not opened.startswith("0{"):
            raise ConnectionError(f"no Engine.IO open packet: {opened[:80]!r}")
        self._send_text(f"40{NAMESPACE}," + json.dumps(key_auth(self.key)))
        answer = await self._next_text()
        if not answer.startswith(f"40{NAMESPACE},"):
            raise ConnectionError(f"namespace connect refused: {answer[:120]!r}")

    async def hold(self) -> None:
        """Answer pings until the Server closes the connection."""
        while True:
            text = await self._next_text()
            if text == "2":
                self._send_text("3")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def _send_text(self, text: str) -> None:
        assert self.writer is not None
        self.writer.write(self.ws.send(Message(data=text)))

    async def _next_text(self) -> str:
        assert self.reader is not None and self.writer is not None
        while not self._texts:
            data = await self.reader.read(READ_SIZE)
            if not data:
                raise ConnectionError("closed by the Server")
            self.ws.receive_data(data)
            for event in self.ws.events():
                if isinstance(event, TextMessage):
                    self._parts.append(event.data)
                    if event.message_finished:
                        self._texts.append("".join(self._parts))
                        self._parts.clear()
                elif isinstance(event, Ping):
                    self.writer.write(self.ws.send(event.response()))
                elif isinstance(event, (CloseConnection, RejectConnection)):
                    raise ConnectionError("closed by the Server")
                elif not isinstance(event, AcceptConnection):
                    continue
        return self._texts.popleft()


async def run(url: str, count: int, key: str, in_flight: int) -> None:
    address = urlsplit(url)
    host, port = address.hostname or "127.0.0.1", address.port or 80
    gate = asyncio.Semaphore(in_flight)
    errors: collections.Counter[str] = collections.Counter()

    async def open_one() -> IdleSocket | None:
        async with gate:
            sock = IdleSocket(host, port, key)
            try:
                await asyncio.wait_for(sock.open(), CONNECT_TIMEOUT)
                return sock
            except (OSError, asyncio.TimeoutError) as exc:
                errors[type(exc).__name__ + ": " + str(exc)[:80]] += 1
                sock.close()
                return None

    started = time.monotonic()
    opened = await asyncio.gather(*(open_one() for _ in range(count)))
    connect_s = time.monotonic() - started
    sockets = [sock for sock in opened if sock is not None]
    holders = [asyncio.ensure_future(sock.hold()) for sock in sockets]
    emit(
        {"event": "ready", "connected": len(sockets), "failed": count - len(sockets), "connect_s": connect_s, "errors": dict(errors)}
    )
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until EOF
    lost = sum(1 for holder in holders if holder.done())
    for holder in holders:
        holder.cancel()
    for sock in sockets:
        sock.close()
    await asyncio.gather(*holders, return_exceptions=True)
    emit({"event": "closed", "lost": lost})


def emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--key", default="")
    parser.add_argument("--in-flight", type=int, default=200)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.count + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    asyncio.run(run(args.url, args.count, args.key, args.in_flight))


if __name__ == "__main__":
    main()
