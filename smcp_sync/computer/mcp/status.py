"""What the Computer knows about each MCP server, as immutable snapshots.

The bridge loop replaces a server's `ServerStatus` wholesale on every change, so sync
threads read a consistent snapshot without taking any lock the loop could wait on.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import attrs

from ...protocol.errors import InternalError


class ServerState(str, enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    #: Crashed or failed to start; waiting out the backoff before the next attempt.
    RESTARTING = "restarting"
    #: Its MCP server refused the connection for want of an OAuth authorization (401 /
    #: 403): waiting for `Computer.authorize` (or tokens stored by `smcp-sync authorize`,
    #: looked for quietly every `ServerPolicy.backoff_max` seconds), not restarting.
    NEEDS_AUTHORIZATION = "needs_authorization"
    STOPPED = "stopped"
    #: `disabled: true` in its configuration: never started.
    DISABLED = "disabled"


@attrs.frozen
class ServerTool:
    """One tool as its MCP server lists it (MCP wire key names inside the dicts)."""

    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ServerCapabilities:
    """The capabilities an MCP server declared at initialize (the ones the Computer uses)."""

    tools: bool = False
    tools_list_changed: bool = False
    resources: bool = False
    resources_subscribe: bool = False
    resources_list_changed: bool = False
    completions: bool = False
    prompts: bool = False


@attrs.frozen
class ServerStatus:
    #: The display name of its configuration (may be shared by several servers).
    name: str
    #: Its identity: the resolved bundle_id (`protocol.bundle_id`).
    bundle_id: str
    state: ServerState
    #: Last known tools; kept while restarting so a tool's owner stays known.
    tools: tuple[ServerTool, ...] = ()
    capabilities: ServerCapabilities | None = None
    #: ``"name version"`` from the server's initialize answer.
    server_info: str | None = None
    #: Why the last connection ended or failed (None after a clean stop).
    error: str | None = None
    #: Successful connections so far; a new value means a new session (resubscribe!).
    generation: int = 0
    #: Its last connection attempt was refused for want of authorization (401 / 403):
    #: tool calls answer 4006 / 4007 until it connects (docs/computer/oauth.md).
    authorization_code: int | None = None

    @property
    def running(self) -> bool:
        return self.state is ServerState.RUNNING


ServerEventKind = Literal[
    "connected",
    "disconnected",
    "tools_changed",
    "resources_list_changed",
    "resource_updated",
    "config_changed",
    "needs_authorization",
]


@attrs.frozen
class ServerEvent:
    """A change on one MCP server, delivered to sync listeners off the event loop."""

    #: The server's bundle_id.
    server: str
    kind: ServerEventKind
    #: The resource for ``resource_updated``.
    uri: str | None = None
    #: The server's status when the event was produced.
    status: ServerStatus | None = None


class ComputerNotRunningError(InternalError, RuntimeError):
    """The Computer is not started, or is closed. Also an `SMCPError`: a peer's request
    that races the Computer's close is answered with it (500, this message) rather than
    logged as a handler's crash (a traceback on the demo's stderr at SIGTERM, seen in CI)."""


class ServersNotStartedError(RuntimeError):
    """`Computer.start(require_all=True)`: some enabled MCP servers did not start.

    `statuses` are theirs (each `error` says why); they keep retrying in the background
    until the Computer is closed."""

    def __init__(self, statuses: list[ServerStatus]) -> None:
        self.statuses = statuses
        reasons = "; ".join(f"{s.bundle_id!r}: {s.error or s.state.value}" for s in statuses)
        super().__init__(f"{len(statuses)} MCP server(s) did not start: {reasons}")
