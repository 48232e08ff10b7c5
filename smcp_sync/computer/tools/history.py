"""A bounded record of recent tool calls.

Why: the Desktop and Finder organisers order MCP servers by how recently the agent
used their tools (spec desktop.md / docs/ARCHITECTURE.md, Wire decisions); nothing else needs old calls, so only
the last few are kept.
"""

from __future__ import annotations

import collections
import threading

import attrs

DEFAULT_HISTORY_SIZE = 10


@attrs.frozen
class ToolCallRecord:
    req_id: str
    #: The MCP server that served (or was to serve) the call.
    server: str
    #: The tool's exposed name (alias if any).
    tool: str
    #: `time.time()` when the call was made.
    timestamp: float
    ok: bool
    #: `meta.error_code` of a failed call (None when the tool itself reported isError).
    error_code: int | None = None


class ToolCallHistory:
    def __init__(self, size: int = DEFAULT_HISTORY_SIZE) -> None:
        self._records: collections.deque[ToolCallRecord] = collections.deque(maxlen=size)
        self._lock = threading.Lock()

    def append(self, record: ToolCallRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> tuple[ToolCallRecord, ...]:
        """Oldest first."""
        with self._lock:
            return tuple(self._records)
