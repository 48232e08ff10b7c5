"""Helpers for the Desktop / Finder tests of the Computer: recording its `server:update_*`
announcements, configs of the resource test servers, and finding their processes.

`QUICK` is the debounce the tests use: a burst still becomes one announcement, and
proving that no further announcement comes costs `QUIET` seconds of waiting.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from smcp_sync.protocol import events

from .helpers import RESOURCE_SERVER, stdio_config, write_state

QUICK = 0.05
#: Long enough for any pending debounced announcement to have fired.
QUIET = 0.5

UNSUBSCRIBABLE_SERVER = os.path.join(os.path.dirname(__file__), "servers", "unsubscribable_server.py")
SLOW_CATALOGUE_SERVER = os.path.join(os.path.dirname(__file__), "servers", "slow_catalogue_server.py")
DOCUMENTS_SERVER = "smcp_sync.demo.servers.documents_server"
WINDOW_SERVER = "smcp_sync.demo.servers.window_server"


class Announcements:
    """A Computer update listener: the Desktop and Finder announcements, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self._changed = threading.Condition()

    def __call__(self, event: str) -> None:
        if event in (events.UPDATE_DESKTOP, events.UPDATE_FINDER):
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()

    def count(self, event: str) -> int:
        with self._changed:
            return self.events.count(event)

    def wait_for(self, event: str, count: int, timeout: float = 10.0) -> None:
        """Until `event` was announced at least `count` times in all."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.events.count(event) >= count, timeout):
                raise AssertionError(f"{event} announced {self.events.count(event)} times, not {count}, in {timeout}s")

    def settle(self, timeout: float = 10.0) -> int:
        """Wait until nothing was announced for `QUIET` seconds; the number of announcements."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                seen = len(self.events)
                self._changed.wait(QUIET)
                if len(self.events) == seen:
                    return seen
                if time.monotonic() > deadline:
                    raise AssertionError(f"announcements never settled: {self.events}")


def resource_config(
    name: str, state: Path, resources: list[dict[str, Any]], *args: str, **extra: Any
) -> dict[str, Any]:
    """A resource_server serving `resources` (written to `state`)."""
    write_state(state, resources)
    return stdio_config(name, "--state", str(state), *args, script=RESOURCE_SERVER, **extra)


def unsubscribable_config(name: str, state: Path, resources: list[dict[str, Any]]) -> dict[str, Any]:
    write_state(state, resources)
    return stdio_config(name, "--state", str(state), script=UNSUBSCRIBABLE_SERVER)


def slow_catalogue_config(
    name: str, host: str, documents: int, read_delay: float, subscribe_delay: float = 0.0
) -> dict[str, Any]:
    """A slow_catalogue_server of `documents` documents ``dpe://<host>/doc-NNN``."""
    args = ["--host-id", host, "--documents", str(documents), "--read-delay", str(read_delay)]
    return stdio_config(name, *args, "--subscribe-delay", str(subscribe_delay), script=SLOW_CATALOGUE_SERVER)


def module_config(name: str, module: str, *args: str) -> dict[str, Any]:
    """An example MCP server of smcp_sync.demo.servers, run as ``python -m module``."""
    parameters = {"command": sys.executable, "args": ["-m", module, *args]}
    return {"name": name, "type": "stdio", "server_parameters": parameters}


def process_serving(path: Path) -> psutil.Process:
    """The child process whose command line names `path` (its state file or folder)."""
    for child in psutil.Process().children(recursive=True):
        try:
            if str(path) in child.cmdline():
                return child
        except psutil.Error:
            continue
    raise AssertionError(f"no child process serving {path}")
