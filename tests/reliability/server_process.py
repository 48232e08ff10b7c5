"""An `SMCPServer` in a child process, so a test reads the Server's own peak RSS and
thread count (psutil) and what it keeps per call, without the test's clients in the same
process. The child serves with `start()`, logs WARNING and above to a file, and answers
one command per stdin line: `state` (a JSON line), `drop` (`drop_connections()`),
anything else stops it."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

#: Seconds the child has to start or to answer a command (it may be loaded: CI).
CHILD_TIMEOUT = 30.0

CHILD = """
import json, logging, sys
from smcp_sync import SMCPServer
from smcp_sync.server import RedisOptions, ServerLimits
from smcp_sync.server.auth import APIKeyAuth

options = json.loads(sys.argv[1])
logging.basicConfig(filename=sys.argv[2], level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
checks = []


class CountingAuth:
    def __init__(self, key):
        self._inner = APIKeyAuth(key)

    def authenticate(self, environ, auth):
        checks.append(1)
        return self._inner.authenticate(environ, auth)


key = options.pop("key", None)
limits = ServerLimits(**options.pop("limits", {}))
redis = RedisOptions(options.pop("redis")) if "redis" in options else None
server = SMCPServer(auth=CountingAuth(key) if key else None, limits=limits, redis=redis, **options)
print(server.start(), flush=True)
for line in sys.stdin:
    if line.strip() == "state":
        tables = dict(server.sio.manager.callbacks)
        state = {
            "ack_tables": len(tables),
            "acks": sum(len(table) - 1 for table in tables.values()),  # entry 0 is a table's id counter
            "pending": len(server.pending),
            "auth_checks": len(checks),
        }
        print(json.dumps(state), flush=True)
    elif line.strip() == "drop":
        server.drop_connections()
        print("dropped", flush=True)
    else:
        break
server.stop()
"""


class ServerProcess:
    def __init__(self, log: Path, **options: Any) -> None:
        self.log = log
        self._proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(options), str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.process = psutil.Process(self._proc.pid)
        self.url = self._line()
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def state(self) -> dict[str, int]:
        return json.loads(self._command("state"))

    def drop_connections(self) -> None:
        assert self._command("drop") == "dropped"

    def peak_rss(self) -> int:
        """The child's peak resident set (Linux: VmHWM), in bytes."""
        for line in Path(f"/proc/{self._proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc/PID/status")

    def stop(self) -> str:
        """Stop the child (a clean `stop()`); its log."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(CHILD_TIMEOUT)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(CHILD_TIMEOUT)
        self._proc.stdin.close()
        self._proc.stdout.close()
        return self.log.read_text() if self.log.exists() else ""

    def _command(self, command: str) -> str:
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._line()

    def _line(self) -> str:
        # one line per command, so nothing is left in the pipe's buffer between them
        if not select.select([self._proc.stdout], [], [], CHILD_TIMEOUT)[0]:
            raise AssertionError(f"the Server child did not answer within {CHILD_TIMEOUT} s")
        line = self._proc.stdout.readline().strip()
        assert line, f"the Server child ended (exit {self._proc.poll()}): {self.log.read_text() if self.log.exists() else ''}"
        return line
