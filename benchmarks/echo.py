"""Which stdio MCP echo server every round-trip path of a run calls.

Like with like: our stack, the official SDK's stack and the direct-MCP floor all call the
same server process type, so the differences in the table are the stacks', not the
servers'. Choices:

* ``official``: ``tests/interop/scripts/echo_mcp_server.py`` (FastMCP, mcp 1.x) run by the
  official SDK venv's python — what the official Computer is built for; our Computer
  and the floor reach it with the mcp 2.x client;
* ``tool-server``: ``tests/mcp_servers/tool_server.py`` (low-level Server, mcp 2.x) run by
  this interpreter — needs no second venv;
* ``auto`` (default): ``official`` when the run includes the official section, else
  ``tool-server``;
* or any command line (``--echo-command``) of a stdio server with a tool
  ``echo(text) -> text``.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOOL_SERVER = REPO / "tests" / "mcp_servers" / "tool_server.py"
OFFICIAL_ECHO = REPO / "tests" / "interop" / "scripts" / "echo_mcp_server.py"
CHOICES = ("auto", "official", "tool-server")


@dataclass(frozen=True)
class EchoServer:
    command: tuple[str, ...]
    label: str

    def config(self, name: str = "echo") -> dict[str, Any]:
        """A stdio MCP server config in the official SDK's format (both Computers read it);
        `auto_apply` so neither Computer asks for a confirmation."""
        return {
            "name": name,
            "type": "stdio",
            "server_parameters": {"command": self.command[0], "args": list(self.command[1:])},
            "default_tool_meta": {"auto_apply": True},
        }


def choose(choice: str, command: str | None, official_python: Any) -> EchoServer:
    """`official_python` is called only when the official echo server is chosen."""
    if command:
        return EchoServer(tuple(shlex.split(command)), f"custom: {command}")
    if choice == "official":
        return EchoServer((str(official_python()), str(OFFICIAL_ECHO)), "echo_mcp_server.py (FastMCP, mcp 1.x)")
    if choice == "tool-server":
        return EchoServer((sys.executable, str(TOOL_SERVER)), "tool_server.py (low-level Server, mcp 2.x)")
    raise ValueError(f"echo server choice must be one of {CHOICES[1:]} here, not {choice!r}")
