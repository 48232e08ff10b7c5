"""One connection's messages, handled in arrival order, those that may wait off the reactor.

Why: the reactor thread (`reactor.py`) reads every websocket of the process and must
never wait, yet a few messages may: a namespace CONNECT (an `AuthProvider` that asks a
remote service) and a DISCONNECT or an Engine.IO CLOSE (disconnect handlers that wait on
the office registry's Redis, up to 2 s each while it hangs). Handled on the reactor's
thread, one client leaving held every websocket of the process. Sending only those
elsewhere would break their order: a DISCONNECT then a CONNECT on the same session
could be refused "already connected" while the leave still ran, and the connection's
end could run the disconnect handlers beside the leave's. So from the first message
that may wait on, a connection's messages are handled on another thread, in order, and
the reactor reads no more of that connection until they are done; its end waits its
turn too. This module knows messages and callbacks only; what a message is, and what
may wait, is the caller's (`engine._ReactorSession`).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

Message = TypeVar("Message")


class InOrder(Generic[Message]):
    """The messages read from one connection and not handled yet (`pending`, oldest
    first, appended to by the reader), handled by `handle` (False: the connection is
    over). `elsewhere` runs a job on a thread that may wait (a pool). Once a connection's
    messages went elsewhere, `resumed(ok)` is called there when they are done (`ok`:
    every one handled), unless the connection ended meanwhile: then `close` runs there,
    after them."""

    __slots__ = ("_away", "_close", "_elsewhere", "_ended", "_handle", "_lock", "_may_wait", "_pending", "_resumed")

    def __init__(
        self,
        pending: list[Message],
        handle: Callable[[Message], bool],
        may_wait: Callable[[Message], bool],
        elsewhere: Callable[[Callable[[], None]], None],
        resumed: Callable[[bool], None],
        close: Callable[[], None],
    ) -> None:
        self._pending = pending
        self._handle = handle
        self._may_wait = may_wait
        self._elsewhere = elsewhere
        self._resumed = resumed
        self._close = close
        self._lock = threading.Lock()
        self._away = False  # messages are being handled elsewhere
        self._ended = False  # and the connection ended meanwhile

    @property
    def away(self) -> bool:
        """Whether messages are being handled elsewhere: nothing more may be read until
        `resumed` (the reactor may be told to watch the connection again meanwhile by a
        writer letting go of it)."""
        return self._away

    def take(self) -> bool | None:
        """On the reactor's thread: handle the pending messages up to the first that may
        wait. False: the connection is over; None: that one and the rest went elsewhere,
        and nothing more is read until `resumed`."""
        while self._pending:
            if self._may_wait(self._pending[0]):
                with self._lock:
                    self._away = True
                self._elsewhere(self._take_rest)
                return None
            if not self._handle(self._pending.pop(0)):
                return False
        return True

    def take_all(self) -> bool:
        """On a thread that may wait: handle every pending message here. False: the
        connection is over."""
        while self._pending:
            if not self._handle(self._pending.pop(0)):
                return False
        return True

    def end(self) -> None:
        """The connection is over: `close` runs elsewhere, after the messages being
        handled there, if any. Called once."""
        with self._lock:
            if self._away:
                self._ended = True
                return
        self._elsewhere(self._close)

    def _take_rest(self) -> None:
        ok = False
        try:
            ok = self.take_all()
        finally:  # whatever happened (a handler that raised: over), it is read again or closed
            self._back(ok)

    def _back(self, ok: bool) -> None:
        with self._lock:
            self._away = False
            ended = self._ended
        if ended:
            self._close()
        else:
            self._resumed(ok)
