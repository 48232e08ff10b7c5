"""Requests the Server has forwarded to a Computer and not yet answered, per Computer sid.

python-socketio's `Server.call()` waits out its whole timeout when the peer disconnects
mid-call (docs/ARCHITECTURE.md, Library facts), and blocks a thread per call. The Server therefore emits with an
ack callback itself and keeps the requests here: each settles once — by the Computer's
answer, by its disconnect (the disconnect handler settles every request of that sid at
once, so the Agent gets its error immediately), or by its deadline — and its `future`
then holds the answer for the Agent. No thread waits on it meanwhile.

python-socketio keeps the ack callback of an emit until the answer comes, which for a
call that timed out may be never, and keeps a table per session called until that
session disconnects from *this* process (never, for a Computer on another Server
process). So a request that ends without its answer drops its callback, and a peer
gone drops its table (`Acks`): nothing of a call stays once it has ended (issue 24).
"""

from __future__ import annotations

import concurrent.futures
import enum
import threading
import time
from typing import Any, Callable, Protocol

from ...threads.deadlines import Deadline, Deadlines


class Outcome(enum.Enum):
    ANSWERED = "answered"
    PEER_GONE = "peer gone"
    TIMED_OUT = "timed out"


class Acks(Protocol):
    """Where the Socket.IO server keeps the ack callbacks of its emits."""

    def forget_ack(self, sid: str, callback: Callable[..., Any]) -> None: ...

    def forget_acks(self, sid: str) -> None: ...


#: Turns how a request ended (and the Computer's ack arguments) into the answer for the
#: Agent, or raises the error to answer with.
Relay = Callable[[Outcome, tuple[Any, ...]], Any]


class ForwardedRequest:
    """One forwarded request: settled once, by the ack, the peer's disconnect or the deadline."""

    def __init__(self, pending: PendingCalls, sid: str, relay: Relay) -> None:
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._pending = pending
        self._sid = sid
        self._relay = relay
        self._lock = threading.Lock()
        self._settled: Outcome | None = None
        self._deadline: Deadline | None = None

    def answer(self, *args: Any) -> None:
        """The ack callback: the Computer's answer, whatever its arity."""
        self._settle(Outcome.ANSWERED, args)

    def peer_gone(self) -> None:
        self._settle(Outcome.PEER_GONE, ())

    def emitted(self) -> None:
        """Call once the request is emitted: if it ended unanswered before (a timeout
        shorter than the emit), the ack callback the emit just made is dropped too."""
        with self._lock:
            unanswered = self._settled not in (None, Outcome.ANSWERED)
        if unanswered:
            self._pending._acks.forget_ack(self._sid, self.answer)

    def _time_out(self) -> None:
        self._settle(Outcome.TIMED_OUT, ())

    def _arm(self, deadline: Deadline) -> None:
        with self._lock:
            if self._settled is None:
                self._deadline = deadline
                return
        deadline.cancel()  # settled meanwhile (its peer left)

    def _settle(self, outcome: Outcome, args: tuple[Any, ...]) -> None:
        with self._lock:
            if self._settled is not None:
                return
            self._settled = outcome
            deadline = self._deadline
        if deadline is not None:
            deadline.cancel()
        self._pending._forget(self._sid, self, answered=outcome is Outcome.ANSWERED)  # before answering: it ends the call
        try:
            self.future.set_result(self._relay(outcome, args))
        except Exception as exc:
            self.future.set_exception(exc)


class PendingCalls:
    """Forwarded requests grouped by the sid they wait on, with their deadlines."""

    def __init__(self, acks: Acks) -> None:
        self._acks = acks
        self._lock = threading.Lock()
        self._by_sid: dict[str, set[ForwardedRequest]] = {}
        self._deadlines = Deadlines("smcp-server-deadlines")

    def forward(self, sid: str, timeout: float, relay: Relay) -> ForwardedRequest:
        """A request to `sid`, registered *before* the caller checks that the peer is still
        there (so a disconnect cannot slip between the check and the emit), timing out
        after `timeout` seconds."""
        request = ForwardedRequest(self, sid, relay)
        with self._lock:
            self._by_sid.setdefault(sid, set()).add(request)
        request._arm(self._deadlines.call_at(time.monotonic() + timeout, request._time_out))
        return request

    def peer_gone(self, sid: str) -> int:
        """Settle every request to `sid` with `Outcome.PEER_GONE`, drop its ack table;
        return how many."""
        with self._lock:
            requests = list(self._by_sid.get(sid, ()))
        for request in requests:
            request.peer_gone()
        self._acks.forget_acks(sid)
        return len(requests)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the deadline thread (call after dropping connections: every request has
        settled then); a later `forward` starts it again."""
        self._deadlines.shutdown(timeout)

    def _forget(self, sid: str, request: ForwardedRequest, answered: bool) -> None:
        if not answered:
            self._acks.forget_ack(sid, request.answer)
        with self._lock:
            requests = self._by_sid.get(sid)
            if requests is not None:
                requests.discard(request)
                if not requests:
                    del self._by_sid[sid]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(r) for r in self._by_sid.values())
