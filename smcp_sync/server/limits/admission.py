"""Counting open connections per client address, to refuse one past the cap.

Why: one address opening hundreds of connections would take every worker thread of the
Server (issue 12); security.md asks for at most 100 per IP.
"""

from __future__ import annotations

import threading


class ConnectionsPerAddress:
    """Thread-safe counts; `cap=None` admits everyone (and still counts nothing)."""

    def __init__(self, cap: int | None) -> None:
        self._cap = cap
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    def admit(self, address: str) -> bool:
        """Count a new connection from `address`; False (and not counted) past the cap."""
        if self._cap is None:
            return True
        with self._lock:
            count = self._open.get(address, 0)
            if count >= self._cap:
                return False
            self._open[address] = count + 1
            return True

    def release(self, address: str) -> None:
        """One admitted connection from `address` has closed."""
        if self._cap is None:
            return
        with self._lock:
            count = self._open.get(address, 0) - 1
            if count > 0:
                self._open[address] = count
            else:
                self._open.pop(address, None)

    def open_from(self, address: str) -> int:
        with self._lock:
            return self._open.get(address, 0)
