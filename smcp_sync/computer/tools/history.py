"""A bounded record of recent tool calls.

Why: the Desktop and Finder organisers order MCP servers by how recently the agent
used their tools (spec desktop.md / docs/ARCHITECTURE.md, Wire decisions); nothing else needs old calls, so only
the last few are kept.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Callable

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
    #: Seconds the call took, confirmation included.
    duration: float = 0.0


logger = logging.getLogger(__name__)


class ToolCallHistory:
    def __init__(self, size: int = DEFAULT_HISTORY_SIZE) -> None:
        self._records: collections.deque[ToolCallRecord] = collections.deque(maxlen=size)
        self._lock = threading.Lock()
        self._watchers: list[Callable[[ToolCallRecord], None]] = []

    def watch(self, watcher: Callable[[ToolCallRecord], None]) -> None:
        """Call `watcher(record)` for every call appended from now on (metrics), on the
        thread that appends it (the Computer's loop): it must not block."""
        self._watchers.append(watcher)

    def append(self, record: ToolCallRecord) -> None:
        with self._lock:
            self._records.append(record)
        for watcher in self._watchers:
            try:
                watcher(record)
            except Exception:
                logger.exception("a tool call watcher failed")

    def records(self) -> tuple[ToolCallRecord, ...]:
        """Oldest first."""
        with self._lock:
            return tuple(self._records)
