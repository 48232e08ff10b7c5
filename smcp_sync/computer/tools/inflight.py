"""Tool calls in progress, by `req_id`, so `notify:tool_call_cancel` can stop them.

Socket.IO handles each event in its own thread, so a cancel may be handled before the
call it names (docs/ARCHITECTURE.md, Library facts: events of one peer run out of order). Cancels that match
nothing are remembered for a while and stop the call when it arrives.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from typing import Any

#: Unmatched cancels remembered (oldest forgotten first).
REMEMBERED_CANCELS = 256


class InFlightCalls:
    def __init__(self) -> None:
        self._calls: dict[str, list[concurrent.futures.Future[Any]]] = {}
        self._early: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def register(self, req_id: str, future: concurrent.futures.Future[Any]) -> None:
        """Track `future`; cancel it at once if its cancel came first."""
        with self._lock:
            if req_id in self._early:
                del self._early[req_id]
                future.cancel()
                return
            self._calls.setdefault(req_id, []).append(future)

    def unregister(self, req_id: str, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            futures = self._calls.get(req_id, [])
            if future in futures:
                futures.remove(future)
            if not futures:
                self._calls.pop(req_id, None)

    def cancel(self, req_id: str) -> bool:
        """Cancel the calls of `req_id`; True when one was in flight."""
        with self._lock:
            futures = self._calls.get(req_id)
            if not futures:
                self._early[req_id] = None
                while len(self._early) > REMEMBERED_CANCELS:
                    self._early.popitem(last=False)
                return False
            for future in futures:
                future.cancel()
            return True
