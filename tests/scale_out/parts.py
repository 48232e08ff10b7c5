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
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import redis

from smcp_sync.server.scale_out.redis_registry import RedisRegistry

NODE = str(Path(__file__).with_name("node.py"))
#: Seconds for Redis or a node to come up, or to go away.
START_TIMEOUT = 20.0


class RedisServer:
    """A `redis-server` on 127.0.0.1:`port`, restartable on that port. Without
    persistence, unless `data_dir` is given: then `snapshot()` saves an RDB file there,
    which the next `start()` loads (a Redis restored from a snapshot)."""

    def __init__(
        self,
        binary: str,
        data_dir: Path | None = None,
        arguments: tuple[str, ...] = (),
        config: Path | None = None,
        tls: Path | None = None,
    ) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.arguments = arguments
        self.config = config
        with socket.socket() as probe:  # a free port, kept for restarts
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        if tls is not None:  # TLS only, with the certificates `certificates()` made in `tls`
            self.arguments += ("--port", "0", "--tls-port", str(self.port), "--tls-auth-clients", "no")
            self.arguments += ("--tls-cert-file", str(tls / "redis.crt"), "--tls-key-file", str(tls / "redis.key"))
            self.arguments += ("--tls-ca-cert-file", str(tls / "ca.crt"))
            self.url = f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={tls / 'ca.crt'}"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        command = [self.binary] + ([str(self.config)] if self.config is not None else [])  # a config file comes first
        command += ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if self.data_dir is not None:
            command += ["--dir", str(self.data_dir), "--dbfilename", "snapshot.rdb"]
        command += self.arguments
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
        """SIGSTOP: Redis hangs (connections stay open, nothing answers) until `thaw()`."""
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

    def kill(self) -> None:
        """SIGKILL: Redis ends without a word (a master lost, for its Sentinels)."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait(START_TIMEOUT)


def certificates(directory: Path) -> Path:
    """A certificate authority (``ca.crt``) and a certificate it signed for 127.0.0.1
    (``redis.crt``, ``redis.key``), made in `directory` by the `openssl` command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        import pytest  # only tests get here

        pytest.skip("the openssl command is not installed (Debian: apt-get install openssl)")

    def run(*arguments: str) -> None:
        subprocess.run([openssl, *arguments], cwd=directory, check=True, capture_output=True, timeout=START_TIMEOUT)

    ca = ("-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # Python 3.13 checks them
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA", *ca, "-keyout", "ca.key", "-out", "ca.crt")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "redis.key", "-out", "redis.csr")
    (directory / "san.cnf").write_text(
        "subjectAltName = IP:127.0.0.1\nkeyUsage = critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage = serverAuth\nauthorityKeyIdentifier = keyid,issuer\n"
    )
    run("x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "san.cnf", "-out", "redis.crt")
    return directory


#: The master's name the Sentinels of `sentinel_group` watch.
SERVICE = "mymaster"


class SentinelGroup:
    """A master, a replica of it and three Sentinels (`redis-server --sentinel`, their
    config files in `directory`: Sentinels rewrite them) on 127.0.0.1, a master declared
    down after 1 s. `url` names them as a scale-out node is given them."""

    def __init__(self, binary: str, directory: Path) -> None:
        # each in a folder of its own: a replica saves the master's data it loads to its folder
        for folder in ("master", "replica"):
            (directory / folder).mkdir()
        self.master = RedisServer(binary, directory / "master")
        self.replica = RedisServer(binary, directory / "replica", arguments=("--replicaof", "127.0.0.1", str(self.master.port)))
        self.sentinels: list[RedisServer] = []
        for i in range(3):
            config = directory / f"sentinel-{i}.conf"
            config.write_text(
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.master.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                f"sentinel failover-timeout {SERVICE} 10000\n"
            )
            self.sentinels.append(RedisServer(binary, arguments=("--sentinel",), config=config))
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        self.url = f"redis+sentinel://{hosts}/0/{SERVICE}"

    def __enter__(self) -> SentinelGroup:
        try:
            for server in (self.master, self.replica, *self.sentinels):
                server.start()
            deadline = time.monotonic() + START_TIMEOUT
            while not self._watched():
                if time.monotonic() > deadline:
                    raise RuntimeError("the Sentinels did not see the replica in sync")
                time.sleep(0.05)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        for server in (*self.sentinels, self.replica, self.master):
            server.stop()

    def master_port(self) -> int:
        """The master's port as the first Sentinel names it now."""
        _, port = self.sentinels[0].command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)  # type: ignore[misc]
        return int(port)

    def _watched(self) -> bool:
        """The replica in sync, and every Sentinel knows it and the other Sentinels."""
        replication = self.replica.command("INFO", "replication")  # redis-py reads it into a dict
        if replication.get("master_link_status") != "up":  # type: ignore[attr-defined]
            return False
        for sentinel in self.sentinels:
            master = _fields(sentinel.command("SENTINEL", "MASTER", SERVICE))
            if master["num-slaves"] != "1" or master["num-other-sentinels"] != "2":
                return False
        return True


def _fields(reply: Any) -> dict[str, str]:
    """A Sentinel's field-value reply as text (redis-py versions give a list or a dict)."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
    text = lambda value: value.decode() if isinstance(value, bytes) else str(value)  # noqa: E731
    return {text(field): text(value) for field, value in pairs}


@contextlib.contextmanager
def sentinel_group(directory: Path) -> Iterator[SentinelGroup]:
    """A started `SentinelGroup`; the test skips without a `redis-server` binary."""
    with SentinelGroup(_binary(), directory) as group:
        yield group


def redis_binary() -> str | None:
    return shutil.which("redis-server") or shutil.which("redis-server", path="/usr/sbin:/usr/local/bin")


@contextlib.contextmanager
def redis_server(data_dir: Path | None = None, tls: Path | None = None) -> Iterator[RedisServer]:
    """A started `RedisServer` (`tls`: see its class); the test skips when there is no
    `redis-server` binary."""
    with RedisServer(_binary(), data_dir, tls=tls) as server:
        yield server


def _binary() -> str:
    """The `redis-server` binary; the test skips without one."""
    binary = redis_binary()
    if binary is None:
        import pytest  # only tests get here

        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run installs it)")
    return binary


def populate(registry: RedisRegistry, count: int, per_office: int, workers: int = 8) -> dict[str, set[str]]:
    """`count` Computers joined through `registry` (on `workers` threads), `per_office` to an
    office ``o0``, ``o1``...; returns each office's sids."""
    offices: dict[str, set[str]] = {}
    for i in range(count):
        offices.setdefault(f"o{i // per_office}", set()).add(f"{registry.incarnation[:6]}-{i}")

    def join(share: list[tuple[str, str]]) -> None:
        for office, sid in share:
            registry.add_session(sid)
            registry.join(sid, "computer", f"pc-{sid}", office)

    pairs = sorted((office, sid) for office, sids in offices.items() for sid in sids)
    threads = [threading.Thread(target=join, args=(pairs[i::workers],)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
        assert not thread.is_alive()
    return offices


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
