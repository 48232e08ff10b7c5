"""A host (gunicorn, a worker pool) as a child process of a test: started, its output
drained by a thread and kept for failure messages, its URL read from its output, and
stopped (its whole process group killed if it does not exit)."""

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


class HostProcess:
    def __init__(self, command: list[str], cwd: Path, ready: str, env: Mapping[str, str]) -> None:
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
        self._reader = threading.Thread(target=self._read, name="host-output", daemon=True)
        self._reader.start()
        if not self._listening.wait(STARTUP_TIMEOUT) or self.url is None:
            self.stop()
            raise AssertionError(f"{command} did not start listening:\n{self.text}")

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
        self._listening.set()  # ended without listening: the test need not wait

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
