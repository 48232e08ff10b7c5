"""Requests the Server has forwarded to a Computer and is waiting on, per Computer sid.

python-socketio's `Server.call()` waits out its whole timeout when the peer disconnects
mid-call (DESIGN §7). The Server therefore emits with an ack callback itself and keeps
the waiters here, so the disconnect handler can wake every waiter of that sid at once and
the Agent gets an error answer immediately instead of after the timeout.
"""

from __future__ import annotations

import enum
import threading
from contextlib import contextmanager
from typing import Any, Iterator


class Outcome(enum.Enum):
    ANSWERED = "answered"
    PEER_GONE = "peer gone"
    TIMED_OUT = "timed out"


class Waiter:
    """One forwarded request: set once, by the ack or by the peer's disconnect."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._outcome: Outcome | None = None
        self._answer: tuple[Any, ...] = ()

    def answer(self, *args: Any) -> None:
        """The ack callback: the Computer's answer, whatever its arity."""
        self._settle(Outcome.ANSWERED, args)

    def peer_gone(self) -> None:
        self._settle(Outcome.PEER_GONE, ())

    def wait(self, timeout: float) -> Outcome:
        if not self._done.wait(timeout):
            return Outcome.TIMED_OUT
        assert self._outcome is not None
        return self._outcome

    @property
    def relayed_answer(self) -> Any:
        """The answer as a handler returns it, so the ack to the Agent carries the same
        values: one value as is, several as a tuple, none as None."""
        if len(self._answer) == 1:
            return self._answer[0]
        return self._answer or None

    def _settle(self, outcome: Outcome, args: tuple[Any, ...]) -> None:
        with self._lock:
            if self._outcome is not None:
                return
            self._outcome, self._answer = outcome, args
        self._done.set()


class PendingCalls:
    """Waiters grouped by the sid they wait on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_sid: dict[str, set[Waiter]] = {}

    @contextmanager
    def waiting_on(self, sid: str) -> Iterator[Waiter]:
        """A waiter registered for `sid` for the duration of the block. Register it
        *before* checking that the peer is still there, so a disconnect cannot slip
        between the check and the wait."""
        waiter = Waiter()
        with self._lock:
            self._by_sid.setdefault(sid, set()).add(waiter)
        try:
            yield waiter
        finally:
            with self._lock:
                waiters = self._by_sid.get(sid)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._by_sid[sid]

    def peer_gone(self, sid: str) -> int:
        """Wake every waiter of `sid` with `Outcome.PEER_GONE`; return how many."""
        with self._lock:
            waiters = self._by_sid.pop(sid, set())
        for waiter in waiters:
            waiter.peer_gone()
        return len(waiters)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._by_sid.values())
