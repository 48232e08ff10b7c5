"""Counts of messages for one client that the Server could not send.

Why: a send to one client never raises into the thread that emits (python-socketio's
emit loop would stop at that recipient, and the rest of an office, or the Agent waiting
for a routed answer, would never get the message); the connection it failed on is
dropped instead. These counts are what is left of each failure, for an operator or a
metrics endpoint (`SMCPServer.send_failures`).
"""

from __future__ import annotations

import threading


class SendFailures:
    """Thread-safe counters: `failed`, sends whose write failed (that connection was shut
    down); `closed`, messages for a session that closed while they were being sent
    (dropped, as Engine.IO drops those for a session gone)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed = 0
        self._closed = 0

    def count_failed(self) -> None:
        with self._lock:
            self._failed += 1

    def count_closed(self) -> None:
        with self._lock:
            self._closed += 1

    @property
    def failed(self) -> int:
        return self._failed

    @property
    def closed(self) -> int:
        return self._closed

    def snapshot(self) -> dict[str, int]:
        """Both counts, read together."""
        with self._lock:
            return {"failed": self._failed, "closed": self._closed}
