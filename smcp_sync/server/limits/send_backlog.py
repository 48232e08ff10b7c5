"""An Engine.IO socket's outgoing queue that knows how many bytes wait in it.

Why: Engine.IO queues every message for a client in an unbounded queue until its writer
(websocket) or its next poll (long-polling) takes it. A client that stops reading makes
the queue, and the Server's memory, grow without limit (issue 12: +103 MB for one
Agent). Knowing the bytes lets the Server drop that client once past
`ServerLimits.max_send_backlog`.

It is always the standard library's `queue.Queue`, also when this module is imported
after gevent patched the standard library (an app mounting the Server, `SMCPServer.mount`,
loaded by gunicorn's gevent worker): gevent 25.4.1+ replaces `queue.Queue` with its own,
which has none of the hooks used here (`_put`, `_get`, `mutex`). The standard class makes
its locks when a queue is made, so under gevent they are gevent's.
"""

from __future__ import annotations

import collections
import queue
import sys
from typing import TYPE_CHECKING, Any, Callable

#: What one queued packet costs besides its data (the packet object, the queue slot).
PACKET_OVERHEAD = 64


def packet_size(pkt: Any) -> int:
    """Bytes a queued Engine.IO packet holds (its data is the encoded Socket.IO packet:
    str, or bytes for binary attachments; control packets carry little or nothing)."""
    data = getattr(pkt, "data", None)
    return PACKET_OVERHEAD + (len(data) if isinstance(data, (str, bytes)) else 0)


def _standard_queue() -> Any:
    """`queue.Queue` as the standard library defines it, whether gevent patched it or not."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_object_patched("queue", "Queue"):
        return monkey.get_original("queue", "Queue")
    return queue.Queue


if TYPE_CHECKING:
    _StandardQueue = queue.Queue[Any]
else:
    _StandardQueue = _standard_queue()


class BacklogQueue(_StandardQueue):
    """`queue.Queue` keeping `backlog`, the bytes of the packets in it (its `_put` and
    `_get` are the hooks `queue.Queue` documents for subclasses; both run under its
    lock), and calling `on_put` after each put, when set (a writer that runs only while
    there is something to send: `engine._WriterOnDemand`). It also counts the packets a
    writer took and has not sent yet (`sent`), so that a message written at once never
    overtakes one taken already (`idle`)."""

    on_put: Callable[[], None] | None = None

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        if maxsize <= 0:  # unbounded (engineio's): no put ever waits for room
            self.not_full = self.not_empty  # one Condition less per connection (~1 KB)

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.backlog = 0
        self._taken = 0  # packets got, not yet `sent`

    def sent(self) -> None:
        """A packet the writer took is written (or the writer gave up on it)."""
        with self.mutex:
            self._taken = max(0, self._taken - 1)

    def polls_over(self) -> None:
        """The session is on its websocket now (its writer starts): what its long-polling
        requests took was written by them, in their answers, never by a writer, and is
        not counted off by `sent`. Left counted, it kept the session from ever being
        `idle`: each message to it was queued and woke a writer."""
        with self.mutex:
            self._taken = 0

    def idle(self) -> bool:
        """Nothing waits in the queue and nothing taken from it is still to be written."""
        with self.mutex:
            return not self.queue and self._taken == 0

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        on_put = self.on_put
        if on_put is not None:
            on_put()

    def _put(self, item: Any) -> None:
        super()._put(item)
        self.backlog += packet_size(item)

    def _get(self) -> Any:
        item = super()._get()
        self.backlog -= packet_size(item)
        if item is not None:
            self._taken += 1
        return item

    def discard(self) -> None:
        """Drop the packets still waiting, keeping end-of-queue markers (None): the
        connection is gone, but its Engine.IO socket stays referenced until its ping
        thread wakes (up to `ping_interval`), and so would everything queued for it."""
        with self.mutex:
            kept = collections.deque(item for item in self.queue if item is None)
            dropped = len(self.queue) - len(kept)
            self.queue = kept
            self.backlog = len(kept) * PACKET_OVERHEAD
            self.unfinished_tasks = max(0, self.unfinished_tasks - dropped)
            if self.unfinished_tasks == 0:
                self.all_tasks_done.notify_all()
