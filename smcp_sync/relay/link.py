"""`RelayLink`: this process's attachment to its relay, shared by all its relay Agents.

One session socket, read by one thread (the keeper), receives the relay's pushes
(notifications, re-joins) and ties the seats this process holds to its life; a pool of
request sockets carries requests, one at a time each: a caller takes an idle socket (or
dials a new one), writes, waits for the answer on it and puts it back. So a call costs no
hand-off between threads on this side, and a socket abandoned mid-call (an interrupt, a
timeout, the process dying) is closed, which the relay takes as "cancel that call".

The relay ending is a reconnect, never a hang: every wait is bounded, a send on a socket
the relay closed fails at once, unread, and means the relay went away (the link attaches again, starting a relay if
none runs, and the seats are opened again), and a request whose socket closes before its
answer fails with `NotConnectedError`, as a direct Agent's does when its connection drops.

Fork: an `os.register_at_fork` hook makes every link in a child forget what it inherited
without writing a byte on it (its sockets are the parent's; its locks may be held by a
parent thread that does not exist here); the child's next call attaches afresh (the relay
Agents' own threads start afresh there by their own hooks: `threads.forks`). The same
once gevent has patched the standard library after the link was made (gunicorn's gevent
worker with `--preload`): its first request renews the locks (its own and, through
`threads.forks`, its Agents' parts), and its sockets, made then, are gevent's, so a call
waits on its greenlet, not on the hub.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import threading
import time
import weakref
from multiprocessing import AuthenticationError
from typing import Any, Protocol

from ..connection.session import NotConnectedError
from ..protocol.errors import AuthError, SMCPError
from ..threads.forks import renew_made_before_patching
from ..threads.gevent_order import stdlib_patched
from .place import RelayPlace
from .start import DEFAULT_START_TIMEOUT, RelayStartError, start_relay, starting
from .wire import HANDSHAKE_TIMEOUT, Channel, RelayGone, dial, receive, send

logger = logging.getLogger(__name__)

#: Seconds a request waits for the relay beyond its own timeout (the relay answers a
#: request's timeout itself; this bounds a relay that stopped answering at all).
RELAY_MARGIN = 5.0
#: Pauses of the keeper between attempts to attach again after the relay went away.
_REATTACH_PAUSES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


class SeatNotOpen(Exception):
    """The relay does not know the seat (it restarted): open it again, then retry."""


class Member(Protocol):
    """A relay Agent's transport, as the link sees it."""

    def reopen(self) -> None: ...

    def pushed(self, message: dict[str, Any]) -> None: ...

    def forked(self) -> None: ...

    def seat(self) -> list[str]: ...


class RelayLink:
    def __init__(self, place: RelayPlace, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.place = place
        self.start_timeout = start_timeout
        self._members: weakref.WeakSet[Any] = weakref.WeakSet()
        self._fresh_state()

    def _fresh_state(self) -> None:
        self._lock = threading.Lock()
        self._attach_lock = threading.Lock()
        self._closed = threading.Event()
        self._token = ""
        self._session: Channel | None = None
        self._idle: list[Channel] = []
        self._keeper: threading.Thread | None = None
        self._made_patched = stdlib_patched()
        self.generation = 0

    # -- members ---------------------------------------------------------------------

    def join(self, member: Member) -> None:
        with self._lock:
            self._members.add(member)
            self._closed.clear()

    def leave(self, member: Member) -> None:
        """Forget `member`; the last one to leave closes the link (threads and sockets)."""
        with self._lock:
            self._members.discard(member)
            if len(self._members):
                return
            self._closed.set()
            session, self._session = self._session, None
            idle, self._idle = self._idle, []
            keeper, self._keeper = self._keeper, None
        for channel in idle:
            channel.close()
        if session is not None:
            _wake(session)
        if keeper is not None and keeper is not threading.current_thread():
            keeper.join(HANDSHAKE_TIMEOUT)
        if session is not None:
            session.close()

    # -- requests --------------------------------------------------------------------

    def request(self, message: dict[str, Any], timeout: float) -> Any:
        """Send `message` to the relay and return its answer's value. Raises the SMCPError
        it answers, `SeatNotOpen`, `NotConnectedError` when no relay answers."""
        if not self._made_patched and stdlib_patched():  # locks made before it would block gevent's hub
            renew_made_before_patching()  # the relay Agent's own parts (threads.forks)
            self._forget_inherited()
        deadline = time.monotonic() + timeout
        for attempt in range(2):
            channel, generation = self._take(deadline)
            bound = _bound(deadline)
            try:
                send(channel, message, bound)
                answer = receive(channel, bound)
            except RelayGone as exc:
                channel.close()
                self._lost(generation)
                if exc.unread and attempt == 0:
                    continue  # a relay that was going away dropped it unread: nothing ran, send it again
                raise NotConnectedError(f"the agent relay went away before answering {message.get('op')} ({exc})") from None
            except BaseException:
                channel.close()  # interrupted mid-request: the relay sees it closed and cancels the call
                raise
            self._give_back(channel, generation)
            return _value_of(answer)
        raise AssertionError("unreachable")

    def _take(self, deadline: float) -> tuple[Channel, int]:
        """An idle request socket, else a new one. An idle one is not looked at first: one
        the relay closed meanwhile fails the send at once, unread (`request` retries)."""
        with self._lock:
            generation = self.generation
            if self._idle and self._session is not None:
                return self._idle.pop(), generation
        token, generation = self._attach(deadline)
        try:
            channel = self._dial(deadline)
        except NotConnectedError:
            self._lost(generation)  # the session is a relay's that is dying: attach again, once
            token, generation = self._attach(deadline)
            channel = self._dial(deadline)
        try:
            send(channel, {"op": "hello", "session": token, "role": "requests"})
            _value_of(receive(channel, max(0.0, deadline - time.monotonic())))
        except (RelayGone, SMCPError) as exc:
            channel.close()
            self._lost(generation)
            raise NotConnectedError(f"the agent relay refused a request socket ({exc})") from None
        return channel, generation

    def _give_back(self, channel: Channel, generation: int) -> None:
        with self._lock:
            if generation == self.generation and self._session is not None:
                self._idle.append(channel)
                return
        channel.close()

    # -- attaching -------------------------------------------------------------------

    def _attach(self, deadline: float) -> tuple[str, int]:
        """The session's token and generation, attaching first if there is no session."""
        if not self._attach_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise NotConnectedError(f"could not attach to the agent relay in {self.place.folder} in time")
        try:
            with self._lock:
                if self._session is not None:
                    return self._token, self.generation
                if self._closed.is_set():
                    raise NotConnectedError("the relay Agent is closed")
            token = secrets.token_hex(16)
            session = self._dial(deadline, start=True)
            try:
                send(session, {"op": "hello", "session": token, "role": "session", "pid": os.getpid()})
                _value_of(receive(session, max(0.0, deadline - time.monotonic())))
            except (RelayGone, SMCPError) as exc:
                session.close()
                raise NotConnectedError(f"the agent relay refused this worker ({exc})") from None
            with self._lock:
                self._session, self._token = session, token
                self.generation += 1
                generation = self.generation
                if self._keeper is None:
                    self._keeper = threading.Thread(target=self._keep, name="smcp-relay-link", daemon=True)
                    self._keeper.start()
            logger.info("attached to the agent relay in %s", self.place.folder)
            return token, generation
        finally:
            self._attach_lock.release()

    def _dial(self, deadline: float, *, start: bool = False) -> Channel:
        key = self.place.authkey()
        try:
            return self._dial_once(key, deadline)
        except NotConnectedError:
            if not start:
                raise
        try:
            with starting(self.place, max(0.0, deadline - time.monotonic())):
                try:
                    return self._dial_once(key, deadline)
                except NotConnectedError:
                    start_relay(self.place, max(0.1, deadline - time.monotonic()))
            return self._dial_once(key, deadline)
        except RelayStartError as exc:
            raise NotConnectedError(str(exc)) from None

    def _dial_once(self, key: bytes, deadline: float) -> Channel:
        try:
            return dial(self.place.socket_path, key, min(HANDSHAKE_TIMEOUT, max(0.1, deadline - time.monotonic())))
        except RelayGone as exc:
            raise NotConnectedError(str(exc)) from None
        except AuthenticationError:
            raise AuthError(f"the agent relay at {self.place.socket_path} refused this process's key") from None

    def _lost(self, generation: int) -> None:
        """The relay went away: forget the session and the idle sockets of `generation`."""
        with self._lock:
            if generation != self.generation or self._session is None:
                return
            session, self._session = self._session, None
            idle, self._idle = self._idle, []
        for channel in idle:
            channel.close()
        _wake(session)
        logger.warning("the agent relay in %s went away; attaching again", self.place.folder)

    def _keep(self) -> None:
        """The keeper: reads pushes; after the relay went away attaches again (bounded
        pauses) and opens the seats again, so notifications resume without a call."""
        pauses, seen = 0, self.generation
        while not self._closed.is_set():
            with self._lock:
                session, generation = self._session, self.generation
            if session is not None and generation != seen:
                if seen:  # attached again (by this thread or by a request): the seats too
                    for member in list(self._members):
                        member.reopen()
                seen = generation
            if session is None:
                try:
                    self._attach(time.monotonic() + self.start_timeout)
                except (SMCPError, OSError) as exc:
                    logger.info("attaching to the agent relay failed: %s", exc)
                    self._closed.wait(_REATTACH_PAUSES[min(pauses, len(_REATTACH_PAUSES) - 1)])
                    pauses += 1
                    continue
                pauses = 0
                continue
            try:
                message = receive(session, None)
            except (RelayGone, ValueError):
                self._lost(generation)
                if self._closed.is_set():
                    session.close()
                continue
            for member in list(self._members):
                if message.get("seat") == member.seat():
                    member.pushed(message)

    # -- fork ------------------------------------------------------------------------

    def _forget_inherited(self) -> None:
        """In a forked child, or once gevent has patched the standard library: close the
        sockets' descriptors (no byte written: in a child they are the parent's) and start
        from nothing, with locks of the threading there is now."""
        for channel in [self._session, *self._idle]:
            if channel is not None:
                channel.close()
        self._fresh_state()
        for member in list(self._members):
            member.forked()


def _bound(deadline: float) -> float:
    """How long a request may wait on its socket, to send it and for its answer: until its
    `deadline` plus `RELAY_MARGIN`, rounded up to the second, so that calls with the same
    timeout leave the socket's timeout as it is (setting it is a system call: `wire.Channel`)."""
    return math.ceil(max(0.0, deadline - time.monotonic())) + RELAY_MARGIN


def _value_of(answer: dict[str, Any]) -> Any:
    if "ok" in answer:
        return answer["ok"]
    error = SMCPError.from_wire(answer.get("error"))
    if error is None:
        raise NotConnectedError(f"the agent relay answered something else than an answer: {answer!r:.200}")
    kind = answer.get("kind")
    if kind == "not_open":
        raise SeatNotOpen(error.message)
    if kind == "not_connected":
        raise NotConnectedError(error.message, details=error.details)
    raise error


def _wake(channel: Channel) -> None:
    """Make the keeper's wait on `channel` return (it then sees the end; so does the relay)."""
    channel.shut()


def relay_status(place: RelayPlace, timeout: float) -> dict[str, Any]:
    """The running relay's counts (its pid, seats, sessions, sockets, calls in flight),
    without attaching or starting one: `NotConnectedError` when none runs."""
    try:
        channel = dial(place.socket_path, place.authkey(), timeout)
    except RelayGone as exc:
        raise NotConnectedError(str(exc)) from None
    try:
        send(channel, {"op": "hello", "session": "status", "role": "requests"})
        _value_of(receive(channel, timeout))
        send(channel, {"op": "status"})
        status: dict[str, Any] = _value_of(receive(channel, timeout))
        return status
    except RelayGone as exc:
        raise NotConnectedError(f"the agent relay went away ({exc})") from None
    finally:
        channel.close()


_LINKS: dict[RelayPlace, RelayLink] = {}
_LINKS_LOCK = threading.Lock()


def link_for(place: RelayPlace, start_timeout: float = DEFAULT_START_TIMEOUT) -> RelayLink:
    """This process's link to the relay at `place` (one per place)."""
    with _LINKS_LOCK:
        link = _LINKS.get(place)
        if link is None:
            link = _LINKS[place] = RelayLink(place, start_timeout)
        return link


def _after_fork_in_child() -> None:
    global _LINKS_LOCK
    _LINKS_LOCK = threading.Lock()
    for link in list(_LINKS.values()):
        link._forget_inherited()


os.register_at_fork(after_in_child=_after_fork_in_child)

