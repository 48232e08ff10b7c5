"""`RelayConnection`: an Agent's transport through the host's relay instead of its own socket.

It has the members of `connection.session.Connection` that the Agent uses (`call`, `emit`,
`on`, `join_office`...), so the Agent's methods are the same code over either transport
(`Agent.via_relay`). Its seat (Server URL, office, Agent name) is fixed when it is made;
it is opened lazily, by the first request in each process (starting the relay when none
runs), and again whenever the relay restarted. A request the relay answers "not open"
(it restarted between two calls) is sent again after the seat is opened: the relay had
not forwarded it, so nothing runs twice.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Callable, Mapping

from ..connection.client_auth import checked_headers
from ..connection.credentials import AuthSource, ConnectAuth
from ..connection.session import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_EMIT_TIMEOUT,
    NotConnectedError,
)
from ..protocol.errors import OfficeError, SMCPError
from .link import RelayLink, SeatNotOpen
from .seats import SeatKey

logger = logging.getLogger(__name__)

Handler = Callable[[Any], Any]


class RelayConnection:
    """One relay Agent's seat; thread-safe like `Connection`."""

    role = "agent"

    def __init__(
        self,
        name: str,
        *,
        url: str,
        office_id: str,
        auth: AuthSource = None,
        headers: Mapping[str, str] | None = None,
        link: RelayLink,
    ) -> None:
        if not isinstance(office_id, str) or not office_id:
            raise ValueError(f"office_id must be a non-empty string, not {office_id!r}")
        self.name = name
        self._key = SeatKey(url, office_id, name)
        self._auth = ConnectAuth(auth, f"relay agent {name!r}")
        self._headers = checked_headers(headers)
        self._link = link
        self._id = uuid.uuid4().hex
        self._handlers: dict[str, Handler] = {}
        self._rejoined: list[Callable[[str], None]] = []
        self._rejoin_failed: list[Callable[[str, SMCPError], None]] = []
        self._opened_in = 0  # the link generation this seat was opened in (0: not open)
        self._left = False
        self._closed = False
        self._server: dict[str, Any] = {}
        link.join(self)

    def __repr__(self) -> str:
        return f"<RelayConnection {self.name!r} office={self._key.office_id!r} url={self.url!r} via {self._link.place.folder}>"

    # -- what the Agent reads ------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._key.url

    @property
    def office_id(self) -> str | None:
        return None if self._left else self._key.office_id

    @property
    def connected(self) -> bool:
        return not self._closed and self._opened_in == self._link.generation != 0

    @property
    def max_message_length(self) -> int | None:
        value = self._server.get("max_message_length")
        return value if isinstance(value, int) else None

    @property
    def peer_extensions(self) -> frozenset[str]:
        return frozenset(self._server.get("peer_extensions") or ())

    # -- lifecycle -----------------------------------------------------------------------

    def connect(self, url: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        """Open the seat now (else the first request does); `url` must be the seat's."""
        if url != self.url:
            raise ValueError(f"this relay Agent's Server is {self.url}, fixed when it was made, not {url}")
        self._open(time.monotonic() + timeout)

    def join_office(self, office_id: str, timeout: float) -> None:
        if office_id != self._key.office_id:
            raise ValueError(
                f"this relay Agent's office is {self._key.office_id!r}, fixed when it was made "
                f"(Agent.via_relay(office_id=...)), not {office_id!r}"
            )
        self._left = False
        self._open(time.monotonic() + timeout)

    def leave_office(self, timeout: float) -> None:
        """Give up this Agent's hold on the seat; the relay leaves the office when no
        worker holds it any more (after its linger)."""
        self._left = True
        self._release(timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._release(DEFAULT_EMIT_TIMEOUT)
        self._link.leave(self)

    def on(self, event: str, handler: Handler) -> None:
        self._handlers[event] = handler

    def on_rejoined(self, callback: Callable[[str], None]) -> None:
        """`callback(office_id)` after each time the seat is opened (first use, the relay
        restarted) or re-joined by the relay after a Server drop."""
        self._rejoined.append(callback)

    def on_rejoin_failed(self, callback: Callable[[str, SMCPError], None]) -> None:
        self._rejoin_failed.append(callback)

    # -- messages ------------------------------------------------------------------------

    def call(self, event: str, payload: Any, timeout: float) -> Any:
        return self._request({"op": "call", "event": event, "payload": payload, "timeout": timeout}, timeout)

    def emit(self, event: str, payload: Any, timeout: float = DEFAULT_EMIT_TIMEOUT) -> None:
        self._request({"op": "emit", "event": event, "payload": payload}, timeout)

    def _request(self, message: dict[str, Any], timeout: float) -> Any:
        if self._closed:
            raise NotConnectedError(f"cannot send {message.get('event')}: agent {self.name!r} is closed")
        if self._left:
            raise OfficeError(f"agent {self.name!r} left office {self._key.office_id!r}; join_office it again", code=4103)
        deadline = time.monotonic() + timeout
        message = {**message, "seat": self._key.wire(), "agent": self._id}
        for _ in range(2):
            self._open(deadline)
            try:
                return self._link.request(message, max(0.0, deadline - time.monotonic()))
            except SeatNotOpen:
                self._opened_in = 0  # the relay restarted since: open again, send again
        raise NotConnectedError(f"the agent relay does not keep seat {self.name!r} of office {self._key.office_id!r} open")

    # -- the seat ------------------------------------------------------------------------

    def seat(self) -> list[str]:
        return self._key.wire()

    def _open(self, deadline: float) -> None:
        generation = self._link.generation
        if self._opened_in == generation != 0:
            return
        request = {
            "op": "open",
            "seat": self._key.wire(),
            "agent": self._id,
            "auth": self._current_auth(),
            "headers": self._headers or None,
            "events": sorted(self._handlers),
            "timeout": max(0.1, deadline - time.monotonic()),
        }
        self._server = self._link.request(request, max(0.1, deadline - time.monotonic())) or {}
        self._opened_in = self._link.generation
        for callback in list(self._rejoined):
            try:
                callback(self._key.office_id)
            except Exception:
                logger.exception("on_rejoined callback %r failed", callback)

    def _current_auth(self) -> dict[str, Any] | None:
        """The auth dict, a callable's asked now (each opening: a rotated token reaches the relay)."""
        auth = self._auth.for_client()
        value: dict[str, Any] | None = auth() if callable(auth) else auth
        return value

    def _release(self, timeout: float) -> None:
        if not self._opened_in:
            return
        self._opened_in = 0
        try:
            self._link.request({"op": "release", "seat": self._key.wire(), "agent": self._id}, timeout)
        except (SMCPError, SeatNotOpen) as exc:
            logger.info("could not release seat %r: %s", self.name, exc)

    # -- called by the link ----------------------------------------------------------------

    def reopen(self) -> None:
        """After the relay restarted: open the seat again (notifications resume)."""
        if self._closed or self._left or not self._opened_in:
            return
        self._opened_in = 0
        try:
            self._open(time.monotonic() + DEFAULT_CONNECT_TIMEOUT * 2)
        except (SMCPError, SeatNotOpen) as exc:
            logger.warning("could not open seat %r again after the relay restarted: %s", self.name, exc)

    def pushed(self, message: dict[str, Any]) -> None:
        kind = message.get("push")
        if kind == "notify":
            handler = self._handlers.get(str(message.get("event")))
            if handler is not None:
                handler(message.get("payload"))
        elif kind == "rejoined":
            for callback in list(self._rejoined):
                callback(self._key.office_id)
        elif kind == "rejoin_failed":
            error = SMCPError.from_wire(message.get("error")) or SMCPError("re-join failed")
            for failed in list(self._rejoin_failed):
                failed(self._key.office_id, error)

    def forked(self) -> None:
        self._opened_in = 0
