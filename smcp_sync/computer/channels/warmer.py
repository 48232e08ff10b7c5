"""The background warm-up of the resource channels (Desktop, Finder and Skills alike):
threads per Computer, one subscribing to what the channels' caches have queued for it
(`ResourceChannel.subscribe_ahead`), one per warm lane reading what is subscribed to
(`ResourceChannel.warm`), each one batch at a time, taking (channel, server) pairs in turn.

Why threads of their own: every MCP request from sync code is a blocking call into the
bridge, and a cold catalogue of thousands of documents takes many seconds to read;
neither the event thread (change detection, tool-list refreshes) nor the debounce thread
(announcements) may be held up that long, and nothing else may run on the loop. Why two:
a URI is read only once its subscription is accepted (else a change could go unheard),
and one thread doing both would leave the loop idle between the two and while it turns
a batch's answers into values; with two, the subscriptions run ahead of the reads and
the reads keep `BATCH_CONCURRENCY` requests in flight all along. Taking pairs in turn,
a batch each, keeps a change notice from waiting behind a whole server's catalogue.
Concurrency stays bounded: one batch per stage at a time, at most `BATCH_CONCURRENCY`
requests of each in flight.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Sequence

from ...threads.thread_stop import join_stopped
from .channel import ResourceChannel, Subscribe, WarmStep

log = logging.getLogger(__name__)

#: URIs subscribed to or read per step: many rounds of `BATCH_CONCURRENCY` requests (each
#: step ends with a wait for its slowest request), few enough that a change notice never
#: waits long behind another server's catalogue.
WARM_BATCH = 256

Channel = ResourceChannel[Any]
#: One step of a stage: ``step(channel, server) -> WarmStep``.
Step = Callable[[Channel, str], WarmStep]


class _Stage:
    """A thread that takes (channel, server) pairs in turn and makes a step of each."""

    def __init__(self, name: str, what: str, step: Step, announce: Callable[[Channel], None]) -> None:
        self._what = what
        self._step = step
        self._announce = announce
        self.worked: Callable[[Channel, str], None] = lambda channel, server: None
        self._changed = threading.Condition()
        self._queue: dict[tuple[Channel, str], None] = {}  # in turn; insertion ordered
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def wake(self, channel: Channel, server: str) -> None:
        with self._changed:
            if not self.stopped:
                self._queue.setdefault((channel, server), None)
                self._changed.notify()

    def halt(self) -> None:
        with self._changed:
            self.stopped = True
            self._queue.clear()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self.stopped:
                    self._changed.wait()
                if self.stopped:
                    return
                key = next(iter(self._queue))
                del self._queue[key]
            channel, server = key
            try:
                step = self._step(channel, server)
            except Exception:
                if self.stopped:  # the bridge may be gone: nothing to report
                    return
                log.exception("%s the %s resources of MCP server %r failed", self._what, channel.name, server)
                continue
            if step.announce:
                self._announce(channel)
            if step.worked:
                self.wake(channel, server)  # to the back of the line: there may be more
                self.worked(channel, server)


class Warmer:
    """One subscribing thread, and a reading thread per warm lane (`lanes`; a channel
    names its `warm_lane`): the Skills, whose reads download and unpack archives, read on
    a lane of their own, so the Desktop's and the Finder's warm-up never waits on them."""

    def __init__(
        self,
        name: str,
        subscribe: Subscribe,
        announce: Callable[[Channel], None],
        batch: int = WARM_BATCH,
        lanes: Sequence[str] = ("shared",),
    ) -> None:
        self._subscribing = _Stage(
            f"smcp-computer-subscribe[{name}]",
            "subscribing to",
            lambda channel, server: channel.subscribe_ahead(server, subscribe, batch),
            announce,
        )
        self._reading = {
            lane: _Stage(
                f"smcp-computer-warm[{name}]" if lane == "shared" else f"smcp-computer-warm-{lane}[{name}]",
                "warming",
                lambda channel, server: channel.warm(server, batch),
                announce,
            )
            for lane in lanes
        }
        self._subscribing.worked = self._read  # what was subscribed to is to be read

    def start(self) -> None:
        self._subscribing.thread.start()
        for stage in self._reading.values():
            stage.thread.start()

    def wake(self, channel: Channel, server: str) -> None:
        """`server` may have URIs of `channel` to warm. Thread-safe, never blocks for long."""
        self._subscribing.wake(channel, server)
        self._read(channel, server)

    def _read(self, channel: Channel, server: str) -> None:
        self._reading[channel.warm_lane].wake(channel, server)

    @property
    def halted(self) -> bool:
        return self._subscribing.stopped

    def halt(self) -> None:
        """Start no more batches: called before the MCP servers stop, whose requests then
        fail (the Computer is closing; the channels, halted too, drop what the batches
        under way read)."""
        self._subscribing.halt()
        for stage in self._reading.values():
            stage.halt()

    def stop(self, timeout: float) -> None:
        """`halt`, and wait for the batches under way (their requests end once the MCP
        servers are stopped)."""
        self.halt()
        join_stopped(self._subscribing.thread, timeout, "subscribing thread")
        for stage in self._reading.values():
            join_stopped(stage.thread, timeout, "warm-up thread")
