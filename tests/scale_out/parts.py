"""Real parts of a scale-out: a `redis-server` of the test's own on a free port, and
Server nodes as child processes (`node.py`) sharing it.

Each module starts its own Redis (parallel tox environments never share one) and stops
it; without a `redis-server` binary the tests skip, saying so. The benchmarks use
`RedisServer` too (this module imports nothing of the test suite).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import redis

NODE = str(Path(__file__).with_name("node.py"))
#: Seconds for Redis or a node to come up, or to go away.
START_TIMEOUT = 20.0


class RedisServer:
    """A `redis-server` on 127.0.0.1:`port`, restartable on that port. Without
    persistence, unless `data_dir` is given: then `snapshot()` saves an RDB file there,
    which the next `start()` loads (a Redis restored from a snapshot)."""

    def __init__(self, binary: str, data_dir: Path | None = None) -> None:
        self.binary = binary
        self.data_dir = data_dir
        with socket.socket() as probe:  # a free port, kept for restarts
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if self.data_dir is not None:
            command += ["--dir", str(self.data_dir), "--dbfilename", "snapshot.rdb"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.command("PING")
                break
            except redis.RedisError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"redis-server did not start on port {self.port}")
                time.sleep(0.05)

    def command(self, *args: object) -> object:
        """One command on a connection of its own (bounded: 5 s)."""
        client = redis.Redis.from_url(self.url, socket_timeout=5.0, socket_connect_timeout=5.0)
        try:
            return client.execute_command(*args)
        finally:
            client.close()

    def snapshot(self) -> None:
        """Save the data now (SAVE); the next `start()` loads it."""
        assert self.data_dir is not None, "a RedisServer without data_dir has no snapshot"
        self.command("SAVE")

    def pause(self, seconds: float) -> None:
        """SIGSTOP the server for `seconds`, then SIGCONT: a Redis that hangs."""
        self.freeze()
        try:
            time.sleep(seconds)
        finally:
            self.thaw()

    def freeze(self) -> None:
        """SIGSTOP: the server hangs (connections stay open, nothing answers) until `thaw()`."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            process.terminate()
            process.wait(START_TIMEOUT)


def redis_binary() -> str | None:
    return shutil.which("redis-server") or shutil.which("redis-server", path="/usr/sbin:/usr/local/bin")


@contextlib.contextmanager
def redis_server(data_dir: Path | None = None) -> Iterator[RedisServer]:
    """A started `RedisServer`; the test skips when there is no `redis-server` binary."""
    binary = redis_binary()
    if binary is None:
        import pytest  # only tests get here

        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run installs it)")
    with RedisServer(binary, data_dir) as server:
        yield server


class Node:
    """A Server node process (`node.py`) on `redis_url`; `url` is where it serves."""

    def __init__(self, redis_url: str, prefix: str | None = None, node_ttl: float | None = None) -> None:
        argv = [sys.executable, NODE, redis_url, prefix or ""] + ([str(node_ttl)] if node_ttl is not None else [])
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # bounded: the node prints or dies
        if not line:
            self.process.wait(START_TIMEOUT)
            raise RuntimeError(f"node exited with {self.process.returncode} before serving")
        self.url: str = json.loads(line)["url"]

    def kill(self) -> None:
        """SIGKILL: the node ends without a word to Redis or its clients."""
        self.process.kill()
        self.process.wait(START_TIMEOUT)

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


@contextlib.contextmanager
def nodes(redis_url: str, count: int, prefix: str | None = None, node_ttl: float | None = None) -> Iterator[list[Node]]:
    """`count` Server nodes sharing `redis_url` (and the deployment `prefix`; `node_ttl`
    their heartbeat's TTL, else the default), stopped on exit."""
    started: list[Node] = []
    try:
        for _ in range(count):
            started.append(Node(redis_url, prefix, node_ttl))
        yield started
    finally:
        for node in started:
            node.stop()
