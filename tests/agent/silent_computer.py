"""A Computer that joins an office and never answers: a bare python-socketio client.

Why not `ScriptedComputer`: a `Connection` answers every request (with an error if
nothing else) and declares our extensions; this peer is a Computer gone silent (wedged,
or a buggy SDK), which the Agent must survive without waiting on it, and declares none.
It records each request it receives and holds it unanswered until `close()`, except the
events given in `answering` (event -> answer for a payload).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

import socketio

from smcp_sync.protocol import events
from smcp_sync.protocol.events import NAMESPACE


class SilentComputer:
    def __init__(self, name: str, answering: Mapping[str, Callable[[Any], Any]] | None = None):
        self.name = name
        self._answering = dict(answering or {})
        self.received: list[tuple[str, Any]] = []
        self.changed = threading.Condition()
        self._release = threading.Event()
        self._sio = socketio.Client(handle_sigint=False, reconnection=False)
        for event in sorted(events.CLIENT_EVENTS):
            self._sio.on(event, self._holder(event), namespace=NAMESPACE)

    def start(self, url: str, office_id: str) -> SilentComputer:
        self._sio.connect(url, namespaces=[NAMESPACE], transports=["websocket"], wait_timeout=5)
        joined = self._sio.call(
            events.JOIN_OFFICE, {"role": "computer", "name": self.name, "office_id": office_id}, namespace=NAMESPACE, timeout=5
        )
        assert joined == [True, None] or joined == (True, None), joined
        return self

    def announce(self, event: str) -> None:
        """Send a `server:update_*` as a Computer does when something changed."""
        self._sio.emit(event, {"computer": self.name}, namespace=NAMESPACE)

    def requests(self, event: str) -> int:
        with self.changed:
            return sum(1 for name, _ in self.received if name == event)

    def wait_for_requests(self, event: str, count: int, timeout: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.requests(event) >= count, timeout), self.received

    def close(self) -> None:
        self._release.set()
        self._sio.disconnect()

    def _holder(self, event: str):
        def hold(payload: Any) -> Any:
            with self.changed:
                self.received.append((event, payload))
                self.changed.notify_all()
            if event in self._answering:
                return self._answering[event](payload)
            self._release.wait(60)  # never answers: the ack goes only once the handler returns
            return None

        return hold
