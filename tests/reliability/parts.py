"""Building blocks: start real parts on an exit stack, configs for the stdio test MCP
server, finding its processes, and a recorder of notifications.

Every part goes on the test's `stack` so it is closed even when the test fails.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import sys
import threading
from typing import Any

import psutil

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.protocol import events, to_wire

from computer.helpers import FAST, TOOL_SERVER, CallLogs, EventLog, wait_until
from mcp_servers import stop, write_state
from office_parts import connected_computer, joined_agent, serving

__all__ = [
    "CLI", "FAST", "TOOL_SERVER", "CallLogs", "EventLog", "Note", "Notes", "free_port", "join_agent", "mcp_children",
    "note", "SETUP_TIMEOUT", "start_computer", "start_server", "stop", "tool_server", "wait_until", "write_state",
]

#: The `smcp-sync` command line, run by the interpreter of the tests.
CLI = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]

#: Seconds for connecting, joining and starting MCP servers.
SETUP_TIMEOUT = 20.0


def tool_server(name: str = "tools", prefix: str = "", env: dict[str, str] | None = None) -> dict[str, Any]:
    """Config of the stdio test MCP server (`tests/mcp_servers/tool_server.py`); with a
    `prefix` every tool name starts with it, which makes a misrouted call visible."""
    args = [TOOL_SERVER, *(["--prefix", prefix] if prefix else [])]
    params: dict[str, Any] = {"command": sys.executable, "args": args}
    if env is not None:
        params["env"] = env
    return {"name": name, "type": "stdio", "server_parameters": params}


def start_server(stack: contextlib.ExitStack, port: int = 0, **options: Any) -> SMCPServer:
    return stack.enter_context(serving(port, **options))


def start_computer(
    stack: contextlib.ExitStack, name: str, url: str, office_id: str, *servers: dict[str, Any], **options: Any
) -> Computer:
    options.setdefault("policy", FAST)
    computer = connected_computer(name, list(servers), url, office_id, timeout=SETUP_TIMEOUT, **options)
    return stack.enter_context(computer)


def join_agent(stack: contextlib.ExitStack, name: str, url: str, office_id: str, **options: Any) -> Agent:
    return stack.enter_context(joined_agent(name, url, office_id, timeout=SETUP_TIMEOUT, **options))


def mcp_children(parent: psutil.Process | None = None) -> list[psutil.Process]:
    """The test MCP server processes below `parent` (default: this process)."""
    parent = parent or psutil.Process()
    found = []
    for child in parent.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if TOOL_SERVER in child.cmdline():
                found.append(child)
    return found


def free_port() -> int:
    """A loopback port nobody listens on right now (for a Server restarted on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


Note = tuple[str, tuple[tuple[str, Any], ...]]


class Notes:
    """Notifications as received, in order; each as a hashable `(event, fields)` so that
    tests can compare multisets of them. Wait on them with `wait_for` / `wait_count`."""

    def __init__(self) -> None:
        self.notes: list[Note] = []
        self._changed = threading.Condition()

    @classmethod
    def of_agent(cls, agent: Agent) -> Notes:
        """Record every notification `agent` receives."""
        notes = cls()
        for event in sorted(events.NOTIFY_EVENTS):
            agent.on(event, lambda model, event=event: notes.record(event, to_wire(model)))
        return notes

    def record(self, event: str, payload: dict[str, Any]) -> None:
        with self._changed:
            self.notes.append(note(event, payload))
            self._changed.notify_all()

    def wait_for(self, event: str, payload: dict[str, Any], timeout: float = 10.0) -> None:
        wanted = note(event, payload)
        with self._changed:
            if not self._changed.wait_for(lambda: wanted in self.notes, timeout):
                raise AssertionError(f"no {wanted} within {timeout}s; got {self.notes}")

    def wait_count(self, count: int, timeout: float = 10.0) -> collections.Counter[Note]:
        """The notifications as a multiset, once there are `count` (or after `timeout`)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.notes) >= count, timeout)
            return collections.Counter(self.notes)


def note(event: str, payload: dict[str, Any]) -> Note:
    return event, tuple(sorted((k, v) for k, v in payload.items() if v is not None))
