"""Tool calls in progress, by `req_id`, so `notify:tool_call_cancel` can stop them.

Socket.IO handles each event in its own thread, so a cancel may be handled before the
call it names (docs/ARCHITECTURE.md, Library facts: events of one peer run out of order). Cancels that match
nothing are remembered for a while and stop the call when it arrives.

A call is registered by the function that stops it (callable from any thread).
"""

from __future__ import annotations

import collections
import threading
from typing import Callable

#: Unmatched cancels remembered (oldest forgotten first).
REMEMBERED_CANCELS = 256

#: Stops one call (from any thread).
Stop = Callable[[], None]


class InFlightCalls:
    def __init__(self) -> None:
        self._calls: dict[str, list[Stop]] = {}
        self._early: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def register(self, req_id: str, stop: Stop) -> None:
        """Track a call; `stop` it at once if its cancel came first."""
        with self._lock:
            if req_id in self._early:
                del self._early[req_id]
                stop()
                return
            self._calls.setdefault(req_id, []).append(stop)

    def unregister(self, req_id: str, stop: Stop) -> None:
        with self._lock:
            stops = self._calls.get(req_id, [])
            if stop in stops:
                stops.remove(stop)
            if not stops:
                self._calls.pop(req_id, None)

    def cancel(self, req_id: str) -> bool:
        """Cancel the calls of `req_id`; True when one was in flight."""
        with self._lock:
            stops = self._calls.get(req_id)
            if not stops:
                self._early[req_id] = None
                while len(self._early) > REMEMBERED_CANCELS:
                    self._early.popitem(last=False)
                return False
            for stop in stops:
                stop()
            return True
