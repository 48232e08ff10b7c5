"""`Seat`: one Agent in one office, held by the relay for every worker that uses it.

A seat is (Server URL, office, Agent name): one `Connection` joined to the office, as an
ordinary Agent (nothing on the wire that a Server would not get from a direct one). The
workers that opened it are its holders (a worker's session and the id of its Agent
object); their notifications are pushed to each holder's session. With no holder left
it stays joined for `linger` seconds, so a worker that makes an Agent per request does
not make the office see the Agent leave and enter each time, then leaves its office.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping, NamedTuple

from ..connection.rejoin import RETRIED_CODES
from ..connection.session import REJOIN, Connection
from ..protocol import events
from ..protocol.errors import SMCPError
from ..threads.deadlines import Deadlines

#: ``push(session, message)``: hands a message to a worker's session (never blocks).
Push = Callable[[str, dict[str, Any]], None]


class NotOpen(Exception):
    """A request names a seat its worker has not opened in this relay (it restarted)."""


class SeatKey(NamedTuple):
    """A tuple, hashed and compared without a Python call: every forwarded call looks its seat up."""

    url: str
    office_id: str
    name: str

    @classmethod
    def of(cls, value: Any) -> SeatKey:
        """From its wire form ``[url, office_id, name]``; anything else is a ValueError."""
        if isinstance(value, list) and len(value) == 3:
            url, office_id, name = value
            if isinstance(url, str) and isinstance(office_id, str) and isinstance(name, str) and url and office_id and name:
                return cls(url, office_id, name)
        raise ValueError(f"seat must be [url, office_id, agent name], three non-empty strings, not {value!r:.200}")

    def wire(self) -> list[str]:
        return [self.url, self.office_id, self.name]


class Seat:
    def __init__(
        self, key: SeatKey, auth: Mapping[str, Any] | None, headers: Mapping[str, str] | None, push: Push,
        deadlines: Deadlines,
    ):  # fmt: skip
        self.key = key
        self._push = push
        self._auth = None if auth is None else dict(auth)
        self.connection = Connection(
            "agent", key.name, auth=None if auth is None else self._current_auth, headers=headers, deadlines=deadlines
        )
        self._lock = threading.Lock()  # one open at a time
        self._holders: dict[str, dict[str, frozenset[str]]] = {}  # session -> agent id -> events it wants
        self._holders_lock = threading.Lock()
        self.unheld_since: float | None = time.monotonic()
        for event in events.NOTIFY_EVENTS:
            self.connection.on(event, self._fan_out(event))
        self.connection.on_rejoined(lambda office_id: self._push_all({"push": "rejoined"}))
        self.connection.on_rejoin_failed(
            lambda office_id, error: self._push_all({"push": "rejoin_failed", "error": error.to_wire()})
        )

    @property
    def joined(self) -> bool:
        """In its office (also while reconnecting: requests then wait for the re-join)."""
        return self.connection.office_id == self.key.office_id

    def _current_auth(self) -> dict[str, Any]:
        """Asked at every (re)connect: the auth the latest opener brought (a rotated token)."""
        return dict(self._auth or {})

    def open(self, session: str, agent_id: str, wanted: frozenset[str], auth: Mapping[str, Any] | None,
             timeout: float) -> dict[str, Any]:
        """Connect and join if the seat is not in its office, add the holder, and say what
        the worker's Agent needs to know of the Server."""
        with self._lock:
            if auth is not None:
                self._auth = dict(auth)
            connection = self.connection
            if not self.joined:
                deadline = time.monotonic() + timeout
                connection.close()
                connection.connect(self.key.url, timeout)
                try:
                    self._join(deadline)
                except SMCPError:
                    connection.close()
                    raise
        with self._holders_lock:
            self._holders.setdefault(session, {})[agent_id] = wanted
            self.unheld_since = None
        return {
            "max_message_length": connection.max_message_length,
            "peer_extensions": sorted(connection.peer_extensions),
        }

    def _join(self, deadline: float) -> None:
        """Join the office; a refusal that may lift is retried until `deadline`, as a
        reconnected Agent's re-join is (`connection.rejoin`): after a relay was killed,
        its seat's old session holds the office until the Server sees it gone (4101)."""
        pauses = REJOIN.pauses()
        while True:
            try:
                self.connection.join_office(self.key.office_id, max(0.1, deadline - time.monotonic()))
                return
            except SMCPError as exc:
                pause = next(pauses, None) if exc.code in RETRIED_CODES else None
                if pause is None or time.monotonic() + pause >= deadline:
                    raise
                time.sleep(pause)

    def release(self, session: str, agent_id: str | None = None) -> None:
        """Drop one holder (`agent_id`) of `session`, or all of them."""
        with self._holders_lock:
            held = self._holders.get(session)
            if held is None:
                return
            if agent_id is None:
                held.clear()
            else:
                held.pop(agent_id, None)
            if not held:
                del self._holders[session]
            if not self._holders and self.unheld_since is None:
                self.unheld_since = time.monotonic()

    def close(self, timeout: float) -> None:
        """Leave the office (the Server tells its Computers) and disconnect."""
        try:
            if self.connection.office_id is not None:
                self.connection.leave_office(timeout)
        except SMCPError:
            pass  # gone already: closing says the same
        self.connection.close(timeout)

    def _fan_out(self, event: str) -> Callable[[Any], None]:
        def push(payload: Any) -> None:
            message = {"push": "notify", "seat": self.key.wire(), "event": event, "payload": payload}
            with self._holders_lock:
                sessions = [s for s, agents in self._holders.items() if any(event in w for w in agents.values())]
            for session in sessions:
                self._push(session, message)

        return push

    def _push_all(self, message: dict[str, Any]) -> None:
        message = {**message, "seat": self.key.wire()}
        with self._holders_lock:
            sessions = list(self._holders)
        for session in sessions:
            self._push(session, message)
