"""`SMCPServer.serve()` (gunicorn: a master and one worker process) in a child process,
for tests of the production server: started with `SMCPServer`'s options, `ServerLimits`
under "limits", a Redis URL under "redis", `serve()`'s under "mode", "threads",
"connections", and under "auth_gate" a loopback port: an `AuthProvider` that admits a
client whose auth has "gate" once the test, listening there, sends it "1" (an
authentication service that waits); stopped by SIGTERM."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from typing import Any, Iterator

import psutil

#: Runs `SMCPServer(limits=ServerLimits(**limits), **options).serve(mode=..., threads=..., connections=...)` and prints
#: the URL once bound.
SERVE = """
import json, socket, sys
from smcp_sync import SMCPServer
from smcp_sync.server import RedisOptions, ServerLimits
options = json.loads(sys.argv[1])
serving = {key: options.pop(key) for key in ("mode", "threads", "connections") if key in options}
if "redis" in options:
    options["redis"] = RedisOptions(options["redis"])
class Gate:
    def __init__(self, port):
        self.port = port
    def authenticate(self, environ, auth):
        if not (isinstance(auth, dict) and auth.get("gate")):
            return True
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as gate:
            return gate.recv(1) == b"1"
if "auth_gate" in options:
    options["auth"] = Gate(options.pop("auth_gate"))
SMCPServer(limits=ServerLimits(**options.pop("limits", {})), **options).serve(port=0, **serving, on_ready=lambda url: print(url, flush=True))
"""
#: Seconds the Server may take to stop on SIGTERM (it drops its connections first: about a second).
STOP_TIMEOUT = 15.0


class Served:
    """The child running `serve()`, and the URL it serves."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url

    def worker(self, timeout: float = 10.0) -> psutil.Process:
        """gunicorn's worker process: the Server (the master binds, then forks it)."""
        deadline = time.monotonic() + timeout
        while not (children := psutil.Process(self.process.pid).children()):
            if time.monotonic() > deadline:
                raise AssertionError("gunicorn's worker did not start")
            time.sleep(0.05)
        return children[0]

    def stop(self) -> int:
        """SIGTERM, then the exit code (killed past `STOP_TIMEOUT`: the test fails on it)."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise AssertionError(f"serve() did not stop within {STOP_TIMEOUT} s of SIGTERM") from None


@contextlib.contextmanager
def serving(**options: Any) -> Iterator[Served]:
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, json.dumps(options)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield Served(process, url)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if process.stdout is not None:
            process.stdout.close()
