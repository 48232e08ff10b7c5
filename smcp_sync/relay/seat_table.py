"""`SeatTable`: the relay's seats by key, made on a worker's first open and left once
no worker has held them for their linger (docs/ARCHITECTURE.md, The Agent relay)."""

from __future__ import annotations

import threading
import time
from typing import Any, Mapping

from ..threads.deadlines import Deadlines
from .seats import NotOpen, Push, Seat, SeatKey


class SeatTable:
    def __init__(self, push: Push, deadlines: Deadlines) -> None:
        self._push = push
        self._deadlines = deadlines  # every seat's requests' expiries, one thread for all
        self._lock = threading.Lock()
        self._seats: dict[SeatKey, Seat] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._seats)

    def open(self, session: str, key: SeatKey, agent_id: str, wanted: frozenset[str],
             auth: Mapping[str, Any] | None, headers: Mapping[str, str] | None, timeout: float) -> dict[str, Any]:
        """Hold the seat for `session`'s Agent `agent_id`, made and joined if need be. A
        seat that could not join stays, unheld: the next open tries again, or its linger
        ends it."""
        with self._lock:
            seat = self._seats.get(key)
            if seat is None:
                seat = self._seats[key] = Seat(key, auth, headers, self._push, self._deadlines)
        return seat.open(session, agent_id, wanted, auth, timeout)

    def joined(self, key: SeatKey) -> Seat:
        """The seat, in its office; `NotOpen` if absent, or another worker's open is still joining it."""
        with self._lock:
            seat = self._seats.get(key)
        if seat is None or not seat.joined:
            raise NotOpen(f"seat {key.name!r} of office {key.office_id!r} at {key.url} is not open in this relay")
        return seat

    def release(self, session: str, key: SeatKey | None = None, agent_id: str | None = None) -> None:
        """Drop `session`'s hold on seat `key` (one Agent of it, or all), or on every seat."""
        with self._lock:
            seats = list(self._seats.values()) if key is None else [s for s in (self._seats.get(key),) if s is not None]
        for seat in seats:
            seat.release(session, agent_id)

    def take_unheld(self, linger: float) -> list[Seat]:
        """Remove and return the seats nobody has held for `linger` seconds (the caller closes them)."""
        now = time.monotonic()
        with self._lock:
            unheld = [
                key for key, seat in self._seats.items()
                if seat.unheld_since is not None and now - seat.unheld_since >= linger
            ]  # fmt: skip
            return [self._seats.pop(key) for key in unheld]

    def take_all(self) -> list[Seat]:
        """Remove and return every seat (the relay closes)."""
        with self._lock:
            seats, self._seats = list(self._seats.values()), {}
            return seats
