"""`WorkerSocket`: one worker's request socket in the relay, and how its answers go back.

A worker sends one request at a time on a request socket and nothing else while it waits
(`link`), so the relay's thread for the socket goes back to reading as soon as it has
forwarded a call: the call's answer is written by whichever thread settles it
(`Connection.request`), most often the seat's Socket.IO reader, with no thread woken
here for it. That thread must never wait for a worker: it writes what the socket takes
at once (`Channel.send_frame_now`: the worker has read every earlier answer, so the
socket's buffer is empty and a usual answer goes whole) and hands the rest of a large
one to a writer thread; a write that fails shuts the socket, never that thread down.
A worker that closes its socket during a call (an interrupt, a timeout, SIGKILL) is
seen at once by the reading thread, which cancels the call (docs/ARCHITECTURE.md, The
Agent relay).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..connection.session import Connection, NotConnectedError, PendingRequest
from ..protocol.errors import BadRequestError, SMCPError
from ..threads.worker_pool import WorkerPool
from .seats import NotOpen
from .wire import Channel, encode, send

logger = logging.getLogger(__name__)


class WorkerSocket:
    def __init__(self, channel: Channel, writers: WorkerPool) -> None:
        self.channel = channel
        self._writers = writers
        self._call: PendingRequest | None = None
        self._on_hangup: Callable[[], Any] | None = None
        self._busy = False
        channel.write_from_elsewhere()

    @property
    def busy(self) -> bool:
        """A forwarded call's answer is still to be written."""
        return self._busy

    def reply(self, message: dict[str, Any]) -> None:
        """An answer known at once, written by the reading thread."""
        send(self.channel, message)

    def forward(
        self, connection: Connection, event: str, payload: Any, timeout: float, on_hangup: Callable[[], Any] | None
    ) -> None:
        """Send the call on `connection`; `on_hangup()` runs if the worker goes before its answer."""
        self._busy, self._on_hangup = True, on_hangup
        self._call = connection.request(event, payload, timeout, self._answered)

    def hang_up(self) -> None:
        """The worker closed the socket (on the reading thread): a call under way is cancelled."""
        call, on_hangup = self._call, self._on_hangup
        self._call = self._on_hangup = None
        self._busy = False
        if call is not None and call.cancel() and on_hangup is not None:
            on_hangup()

    def _answered(self, answer: Any, error: SMCPError | None) -> None:
        self._busy = False  # before the write: the worker's next request may follow it at once
        try:
            rest = self.channel.send_frame_now(encode(reply_of(answer, error)))
        except (OSError, ValueError) as exc:  # the worker is gone; ValueError: an answer JSON cannot carry
            logger.info("could not answer a worker: %s", exc)
            self.channel.shut()
            return
        if rest and not self._writers.submit(self._send_rest, rest):
            logger.info("could not answer a worker: the relay is closing")
            self.channel.shut()

    def _send_rest(self, rest: memoryview) -> None:
        try:
            self.channel.send_rest(rest)
        except OSError as exc:
            logger.info("could not finish an answer to a worker: %s", exc)
            self.channel.shut()  # it sees the end, not half an answer


def reply_of(value: Any, error: BaseException | None) -> dict[str, Any]:
    """The relay's answer to a worker (`wire`): the value, or the error and its kind."""
    if error is None:
        return {"ok": value}
    if isinstance(error, NotOpen):
        return {"error": BadRequestError(str(error)).to_wire(), "kind": "not_open"}
    if isinstance(error, NotConnectedError):
        return {"error": error.to_wire(), "kind": "not_connected"}
    if isinstance(error, SMCPError):
        return {"error": error.to_wire()}
    return {"error": BadRequestError(f"bad relay request: {error}").to_wire()}
