"""The background warm-up of the resource channels (Desktop and Finder alike): one thread
per Computer that subscribes to and reads what the channels' caches have queued for it
(`ResourceChannel.warm`), one batch at a time, taking (channel, server) pairs in turn.

Why a thread of its own: every MCP request from sync code is a blocking call into the
bridge, and a cold catalogue of thousands of documents takes many seconds to read;
neither the event thread (change detection, tool-list refreshes) nor the debounce thread
(announcements) may be held up that long, and nothing else may run on the loop. Taking
pairs in turn, a batch each, keeps a change notice from waiting behind a whole server's
catalogue. Concurrency stays bounded: one batch at a time, at most `BATCH_CONCURRENCY`
requests of it in flight.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from .resource_channel import ResourceChannel, Subscribe
from .thread_stop import join_stopped

log = logging.getLogger(__name__)

#: URIs subscribed to and read per step: many rounds of `BATCH_CONCURRENCY` requests (each
#: step ends with a wait for its slowest request), few enough that a change notice never
#: waits long behind another server's catalogue.
WARM_BATCH = 256

Channel = ResourceChannel[Any]


class Warmer:
    def __init__(
        self, name: str, subscribe: Subscribe, announce: Callable[[Channel], None], batch: int = WARM_BATCH
    ) -> None:
        self._subscribe = subscribe
        self._announce = announce
        self._batch = batch
        self._changed = threading.Condition()
        self._queue: dict[tuple[Channel, str], None] = {}  # in turn; insertion ordered
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"smcp-computer-warm[{name}]", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self, channel: Channel, server: str) -> None:
        """`server` may have URIs of `channel` to warm. Thread-safe, never blocks for long."""
        with self._changed:
            if not self._stopped:
                self._queue.setdefault((channel, server), None)
                self._changed.notify()

    @property
    def halted(self) -> bool:
        return self._stopped

    def halt(self) -> None:
        """Warm nothing more, and drop what the batch under way reads, unlogged: called
        before the MCP servers stop, whose requests then fail (the Computer is closing)."""
        with self._changed:
            self._stopped = True
            self._queue.clear()
            self._changed.notify()

    def stop(self, timeout: float) -> None:
        """`halt`, and wait for the batch under way (its requests end once the MCP servers
        are stopped)."""
        self.halt()
        join_stopped(self._thread, timeout, "warm-up thread")

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._stopped:
                    self._changed.wait()
                if self._stopped:
                    return
                key = next(iter(self._queue))
                del self._queue[key]
            channel, server = key
            try:
                step = channel.warm(server, self._subscribe, self._batch, lambda: self._stopped)
            except Exception:
                if self._stopped:  # the bridge may be gone: nothing to report
                    return
                log.exception("warming the %s resources of MCP server %r failed", channel.name, server)
                continue
            if step.announce:
                self._announce(channel)
            if step.worked:
                self.wake(channel, server)  # to the back of the line: there may be more
