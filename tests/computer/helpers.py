"""Helpers for the Computer's tests: configs for the test MCP servers, waiting, recording.

`FAST` supervision timings keep restart tests quick.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from smcp_sync.computer import ServerEvent, ServerPolicy

try:
    from tests.mcp_servers import RESOURCE_SERVER, TOOL_SERVER, start_http_server, stop, write_state
except ImportError:  # tests/ itself is on sys.path
    from mcp_servers import RESOURCE_SERVER, TOOL_SERVER, start_http_server, stop, write_state

__all__ = [
    "FAST", "RESOURCE_SERVER", "TOOL_SERVER", "CallLogs", "EventLog", "http_config", "start_http_server",
    "stdio_config", "stop", "wait_until", "write_state",
]

FAST = ServerPolicy(init_timeout=20.0, backoff_initial=0.1, backoff_max=1.0, stop_timeout=5.0)


def stdio_config(
    name: str, *args: str, script: str = TOOL_SERVER, env: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    """An official-format stdio server config running a test server script."""
    params: dict[str, Any] = {"command": sys.executable, "args": [script, *args]}
    if env is not None:
        params["env"] = env
    return {"name": name, "type": "stdio", "server_parameters": params, **extra}


def http_config(name: str, transport: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": transport, "server_parameters": {"url": url}, **extra}


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll `condition` (cheap, local state) until truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        time.sleep(0.02)


class EventLog:
    """A Computer listener that records server events and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[ServerEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: ServerEvent) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[ServerEvent], bool], timeout: float = 10.0) -> ServerEvent:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no matching event within {timeout}s; got {[(e.server, e.kind) for e in self.events]}")
                self._changed.wait(remaining)

    def kinds(self, server: str) -> list[str]:
        with self._changed:
            return [e.kind for e in self.events if e.server == server]


class CallLogs:
    """The tool_server's `sleep` log files: which calls started, which were cancelled.

    Tests tell their calls apart by a unique `seconds` value."""

    def __init__(self, directory: Path) -> None:
        self.started = directory / "started.log"
        self.cancelled = directory / "cancelled.log"

    @property
    def env(self) -> dict[str, str]:
        return {"SMCP_TEST_STARTED_LOG": str(self.started), "SMCP_TEST_CANCEL_LOG": str(self.cancelled)}

    def wait_started(self, seconds: float, timeout: float = 10.0) -> None:
        wait_until(lambda: _has_line(self.started, seconds), timeout, f"sleep({seconds}) started")

    def wait_cancelled(self, seconds: float, timeout: float = 10.0) -> None:
        wait_until(lambda: _has_line(self.cancelled, seconds), timeout, f"sleep({seconds}) cancelled")


def _has_line(path: Path, seconds: float) -> bool:
    return path.exists() and f"seconds={float(seconds)}" in path.read_text(encoding="utf-8")


