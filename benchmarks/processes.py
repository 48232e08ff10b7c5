"""Start the child processes a benchmark needs, each bounded and always stopped.

Built on the interop harness's `JsonLineProcess` (tests/interop/harness.py): JSON lines
on stdout, waits with timeouts, and a `stop()` that ends the child's whole process group
(MCP grandchildren included). `Peers` is a context manager so an exception half way
through a section still stops everything it started.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.interop.harness import JsonLineProcess, OfficialPeer, start_official_server

from .echo import REPO

HERE = Path(__file__).resolve().parent

#: Seconds a peer may take to print its ready line.
READY_TIMEOUT = 60.0


class Peers:
    """The children started inside one ``with Peers() as peers:`` block."""

    def __init__(self) -> None:
        self._children: list[JsonLineProcess] = []

    def __enter__(self) -> Peers:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for child in self._children:  # all of them begin to wind down at once
            child.close_stdin()
        for child in reversed(self._children):
            child.stop(timeout=10, grace=5)

    def _adopt(self, child: JsonLineProcess) -> JsonLineProcess:
        self._children.append(child)
        return child

    def spawn(self, argv: list[str], name: str) -> JsonLineProcess:
        """Start `argv` (it announces itself with a ``ready`` line, see `JsonLineProcess.wait_for`)."""
        return self._adopt(JsonLineProcess(argv, name=name, cwd=REPO))

    def start(self, role: str, *args: str, timeout: float = READY_TIMEOUT) -> dict[str, Any]:
        """Start ``python -m benchmarks.peers ROLE ARGS``; return its ready line."""
        return self.spawn([sys.executable, "-m", "benchmarks.peers", role, *args], f"peer-{role}").wait_for(
            "ready", timeout
        )

    def computer(self, url: str, office: str, name: str, config: Any, timeout: float = READY_TIMEOUT) -> dict[str, Any]:
        """A Computer peer with `config` (one MCP server config or a list), joined to `office`."""
        args = ["--url", url, "--office", office, "--name", name, "--mcp-config", json.dumps(config)]
        return self.start("computer", *args, "--timeout", str(timeout), timeout=timeout + 10)

    def official_server(self, python: os.PathLike | str) -> str:
        """The official SDK's sync Server (werkzeug) with tracing off; returns its URL."""
        server = start_official_server(python, trace=False, timeout=READY_TIMEOUT)
        return self._adopt(server).url

    def official_computer(
        self, peer: OfficialPeer, url: str, office: str, name: str, config: dict[str, Any]
    ) -> JsonLineProcess:
        """The official SDK's Computer, untraced (`official_computer.py` here); not waited for."""
        argv = [*_official_client(peer, "official_computer.py", url, office, name), "--mcp-config", json.dumps(config)]
        return self.spawn(argv, f"official-computer-{peer.version}-{name}")

    def official_driver(
        self, peer: OfficialPeer, url: str, office: str, name: str, computer: str, text: str, call_timeout: int
    ) -> JsonLineProcess:
        """`official_driver.py`, which joins, then runs the plans sent on its stdin; not waited for."""
        argv = _official_client(peer, "official_driver.py", url, office, name)
        argv += ["--computer", computer, "--tool", peer.tool("echo", "echo"), "--text", text]
        return self.spawn([*argv, "--call-timeout", str(call_timeout)], f"official-driver-{peer.version}")


def _official_client(peer: OfficialPeer, script: str, url: str, office: str, name: str) -> list[str]:
    """The command line of an official client script here: who, where, and how to present
    the key to that version's own Server."""
    argv = [str(peer.python), str(HERE / script), "--url", url, "--office", office, "--name", name]
    return [*argv, "--auth-via", peer.auth_via_own_server]
