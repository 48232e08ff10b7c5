"""The real parts of the relay tests: a Server, a Computer with the test tool server in
office `OFFICE`, a private relay folder per test whose relay is stopped (SIGTERM, then
SIGKILL) when the test ends, and worker processes (`worker.py`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Iterator

import psutil
import pytest
from mcp_servers import TOOL_SERVER
from office_parts import connected_computer, serving

from smcp_sync.connection.session import NotConnectedError
from smcp_sync.relay.link import relay_status
from smcp_sync.relay.place import RelayPlace

OFFICE = "relay-office"
WORKER = str(Path(__file__).with_name("worker.py"))
TESTS = str(Path(__file__).resolve().parent.parent)


@pytest.fixture(scope="module")
def logs() -> Iterator[dict[str, Path]]:
    folder = Path(tempfile.mkdtemp(prefix="relay-logs-"))
    yield {"SMCP_TEST_STARTED_LOG": folder / "started.log", "SMCP_TEST_CANCEL_LOG": folder / "cancelled.log"}
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def office(no_leaks_in_module: None, logs: dict[str, Path]) -> Iterator[Any]:
    """The Server (its `url`) with Computer c1 in `OFFICE`."""
    config = {
        "name": "tools",
        "type": "stdio",
        "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER], "env": {k: str(v) for k, v in logs.items()}},
        "default_tool_meta": {"auto_apply": True},
    }
    with serving() as server, connected_computer("c1", [config], server.url, OFFICE, timeout=30):
        yield server


@pytest.fixture
def place() -> Iterator[RelayPlace]:
    """A relay folder of the test's own (short: a Unix socket's path is at most 107 bytes)."""
    folder = tempfile.mkdtemp(prefix="relay-", dir="/tmp")
    os.rmdir(folder)  # the relay makes it, 0700
    relay_place = RelayPlace.at(folder)
    yield relay_place
    stop_relay(relay_place)
    shutil.rmtree(folder, ignore_errors=True)


def running_relay(place: RelayPlace) -> int | None:
    try:
        return int(relay_status(place, 5)["pid"])
    except NotConnectedError:
        return None


def stop_relay(place: RelayPlace, timeout: float = 20) -> None:
    """SIGTERM the relay of `place` and wait for it to end (SIGKILL past `timeout`)."""
    for process in relays_of(place):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except psutil.TimeoutExpired:
                process.kill()
                process.wait(timeout)


def relays_of(place: RelayPlace) -> list[psutil.Process]:
    """Every relay process serving `place` (found by their command lines)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = process.info["cmdline"] or []
        if "agent-relay" in line and str(place.folder) in line:
            found.append(process)
    return found


class Worker:
    """A `worker.py` process; its stdout lines, parsed, arrive in `lines`."""

    def __init__(self, place: RelayPlace, url: str, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": TESTS}
        self.process = subprocess.Popen(
            [sys.executable, WORKER, str(place.folder), url, OFFICE, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            with self._changed:
                self.lines.append(json.loads(line))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, field: str, count: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
        """The first `count` lines with `field`, once they have come."""

        def found() -> list[dict[str, Any]]:
            return [line for line in self.lines if field in line]

        with self._changed:
            self._changed.wait_for(lambda: len(found()) >= count or self.process.poll() is not None, timeout)
            lines = found()
        assert len(lines) >= count, f"worker {self.process.pid}: {len(lines)} of {count} {field!r} lines; all: {self.lines[-5:]}"
        return lines[:count]

    def say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def finish(self, timeout: float = 120) -> list[dict[str, Any]]:
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        assert self.process.wait(timeout) == 0
        self._reader.join(timeout)
        return self.lines

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
        with contextlib.suppress(BrokenPipeError):
            if self.process.stdin is not None:
                self.process.stdin.close()


def wait_until(condition: Any, timeout: float, what: str) -> None:
    """Wait for a condition another process brings about (nothing to wait on but it)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.05)
