"""`MCPServers`: the one admin face of a Computer's MCP servers, `computer.servers`
(issue 35): add, remove, start, stop, restart and their statuses. Thin over the
internal `ServerManager`: each change is followed by the Computer's tool catalogue, so
agents see the tools of the servers running."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..protocol.models import MCPServerConfig
from .mcp.manager import ServerManager
from .mcp.status import ServerStatus

#: Seconds `start` / `add` wait for an MCP server's first connection attempt by default.
DEFAULT_START_TIMEOUT = 30.0


class MCPServers:
    """The MCP servers of one Computer. Thread-safe; every method blocks (bounded)."""

    def __init__(
        self,
        manager: ServerManager,
        *,
        started: Callable[[], bool],
        require_started: Callable[[], None],
        tools_changed: Callable[[], None],
    ) -> None:
        self._manager = manager
        self._started = started
        self._require_started = require_started
        self._tools_changed = tools_changed

    def statuses(self) -> list[ServerStatus]:
        """Every configured MCP server's status, in configuration order."""
        return [status for _, status in self._manager.snapshot()]

    def status(self, bundle_id: str) -> ServerStatus:
        return self._manager.status(bundle_id)

    def add(self, config: MCPServerConfig | Mapping[str, Any], timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        """Add an MCP server, or replace the one with the same bundle_id; started unless
        disabled (and unless the Computer is not started yet)."""
        model = self._manager.configure(config)
        assert model.bundle_id is not None  # resolved by configure
        if self._started() and not model.disabled:
            self._manager.start(model.bundle_id, timeout)
        self._tools_changed()
        return self._manager.status(model.bundle_id)

    def remove(self, bundle_id: str) -> None:
        self._manager.remove(bundle_id)
        self._tools_changed()

    def start(self, bundle_id: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.start(bundle_id, timeout)
        self._tools_changed()
        return status

    def stop(self, bundle_id: str) -> ServerStatus:
        self._manager.stop(bundle_id)
        self._tools_changed()
        return self._manager.status(bundle_id)

    def restart(self, bundle_id: str, timeout: float = DEFAULT_START_TIMEOUT) -> ServerStatus:
        self._require_started()
        status = self._manager.restart(bundle_id, timeout)
        self._tools_changed()
        return status
