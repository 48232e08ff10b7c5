"""What every handler group shares: the Socket.IO server, the registry, and the checks
that tie a caller's session to its office.
"""

from __future__ import annotations

from typing import Any, Callable

from ...protocol.errors import ErrorCode, ForbiddenError, OfficeError
from ...protocol.events import NAMESPACE
from ..offices.office_rules import Session
from ..offices.registry import OfficeRegistry
from ..transport.engine import SocketIOServer


def office_room(office_id: str) -> str:
    """The Socket.IO room of an office. Prefixed, because every sid is also a room: an
    office named like someone's sid must not reach that client's private room."""
    return f"office:{office_id}"


class Offices:
    def __init__(
        self, sio: SocketIOServer, registry: OfficeRegistry, fanned_out: Callable[[str], None] | None = None
    ) -> None:
        self.sio = sio
        self.registry = registry
        self._fanned_out = fanned_out  # told each notification's event (metrics)

    def member(self, sid: str) -> Session:
        """The caller's session; 4103 unless it is in an office."""
        session = self.registry.session(sid)
        if session is None or not session.joined:
            raise OfficeError("join an office first", code=ErrorCode.NOT_IN_ROOM)
        return session

    def agent(self, sid: str, claimed_name: str) -> Session:
        """The caller's session if it is a joined Agent named `claimed_name`; 4103 / 403 otherwise."""
        session = self.member(sid)
        if session.role != "agent":
            raise ForbiddenError("only an agent may send this event", details={"role": session.role})
        if session.name != claimed_name:
            raise ForbiddenError(
                f"field agent is {claimed_name!r} but this session joined as {session.name!r}",
                details={"agent": claimed_name},
            )
        return session

    def notify(self, office_id: str, event: str, payload: Any, skip_sid: str | None) -> None:
        """Broadcast to one office. The sender is skipped: it knows what it did (and the
        official SDK's Server behaves the same)."""
        self.sio.emit(event, payload, to=office_room(office_id), skip_sid=skip_sid, namespace=NAMESPACE)
        if self._fanned_out is not None:
            self._fanned_out(event)
