"""A host (gunicorn, a worker pool) as a child process of a test: started, its output
drained by a thread and kept for failure messages, its URL read from its output, and
stopped (its whole process group killed if it does not exit).

A test that stops gunicorn soon after it listens waits for its workers too
(`workers=`, with `GUNICORN_CONF` in the host's folder): a worker forked after the
SIGTERM still has the master's signal handler until it sets its own, takes the signal
for the master's queue, and lives on; the master then waits its graceful timeout."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Mapping

STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
WORKER_READY = "Worker ready"
GUNICORN_CONF = f"""
def post_worker_init(worker):
    worker.log.info("{WORKER_READY} (pid: %s)", worker.pid)
"""  # gunicorn reads ./gunicorn.conf.py by default


class HostProcess:
    def __init__(
        self, command: list[str], cwd: Path, ready: str, env: Mapping[str, str], workers: int = 0
    ) -> None:
        if workers:
            (cwd / "gunicorn.conf.py").write_text(GUNICORN_CONF)
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its workers go with it when the test kills the group
        )
        self.output: list[str] = []
        self._ready = re.compile(ready)
        self.url: str | None = None
        self._listening = threading.Event()
        self._workers_left = workers
        self._workers_ready = threading.Event()
        self._reader = threading.Thread(target=self._read, name="host-output", daemon=True)
        self._reader.start()
        if not self._listening.wait(STARTUP_TIMEOUT) or self.url is None:
            self.stop()
            raise AssertionError(f"{command} did not start listening:\n{self.text}")
        if workers and not self._workers_ready.wait(STARTUP_TIMEOUT):
            self.stop()
            raise AssertionError(f"{command} did not get {workers} workers ready:\n{self.text}")

    @property
    def text(self) -> str:
        return "".join(self.output)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            match = self._ready.search(line)
            if match and self.url is None:
                self.url = match.group(1)
                self._listening.set()
            if WORKER_READY in line:
                self._workers_left -= 1
                if self._workers_left == 0:
                    self._workers_ready.set()
        self._listening.set()  # ended without listening: the test need not wait
        self._workers_ready.set()

    def stop(self) -> int:
        """SIGTERM, then SIGKILL to the group if it has not exited in time; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(STOP_TIMEOUT)
        self._reader.join(STOP_TIMEOUT)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return self.proc.returncode
