"""Carries `ServerEvent`s from the bridge loop to sync code, on one dedicated thread.

Why a thread: loop code must never block (a listener may emit on a socket or read a
resource), and listeners may call back into the Computer, which blocks on the loop.
Events that arrive together are handed over as one batch, so a burst of changes
costs one tool-list refresh.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Sequence

from ..computer.mcp.status import ServerEvent
from .thread_stop import join_stopped

log = logging.getLogger(__name__)

BatchHandler = Callable[[Sequence[ServerEvent]], None]

_STOP = object()


class EventPump:
    def __init__(self, name: str, handler: BatchHandler) -> None:
        self._handler = handler
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"smcp-computer-events[{name}]", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def post(self, event: ServerEvent) -> None:
        """Thread-safe and never blocks: callable from the loop."""
        self._queue.put(event)

    def stop(self, timeout: float) -> None:
        """Stop after the events already posted; from a listener, without waiting."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            join_stopped(self._thread, timeout, "event thread")

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            events = [item for item in batch if isinstance(item, ServerEvent)]
            if events:
                try:
                    self._handler(events)
                except Exception:
                    log.exception("handling MCP server events failed")
            if stop:
                return
