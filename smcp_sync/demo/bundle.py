"""The Computer configuration of the demo: the three bundled example MCP servers.

Each runs as ``<this Python> -m smcp_sync.demo.servers.<module>``: the interpreter that
runs the demo has smcp_sync installed, wherever it is, so no path or virtualenv has to
be guessed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..protocol.models import StdioServerConfig, StdioServerParameters

#: How often the documents server looks at its folder: short, so that the demo's
#: update notification follows the file change within about a second.
DOCUMENTS_POLL_INTERVAL = 0.2


def bundled_servers(documents: Path) -> list[StdioServerConfig]:
    """Configs of the tools, documents (serving `documents`) and window servers."""
    return [
        _module_server("tools", "tools_server", "--root", str(documents)),
        _module_server(
            "documents", "documents_server", "--root", str(documents), "--poll-interval", str(DOCUMENTS_POLL_INTERVAL)
        ),
        _module_server("windows", "window_server", "--metadata", "annotations"),
    ]


def _module_server(name: str, module: str, *args: str) -> StdioServerConfig:
    parameters = StdioServerParameters(command=sys.executable, args=["-m", f"{__package__}.servers.{module}", *args])
    return StdioServerConfig(name=name, server_parameters=parameters)
