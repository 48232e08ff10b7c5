"""Sessions entering and leaving offices: connect, disconnect, join, leave, list_room.

Handlers of one client run concurrently (docs/ARCHITECTURE.md, Library facts), so every membership change of a sid
— registry update, Socket.IO room change, notifications — runs under that sid's lock:
otherwise a join racing a leave could leave the socket in a room the registry no longer
lists. The registry lock itself is never held while emitting.
"""

from __future__ import annotations

import logging
import threading
import zlib
from typing import Any, Callable, Mapping

import socketio

from ...protocol import events
from ...protocol.codec import to_wire
from ...protocol.errors import AuthError, ErrorCode, OfficeError
from ...protocol.events import NAMESPACE
from ...protocol.models import (
    EnterOfficeNotification,
    EnterOfficeReq,
    LeaveOfficeNotification,
    LeaveOfficeReq,
    ListRoomReq,
    ListRoomRet,
    SessionInfo,
)
from ..auth import AuthProvider
from ..offices.answers import parse_payload
from ..offices.office_rules import Session
from ..offices.registry import RegistryListener
from ..transport.handshake import declared_handshake
from .offices import Offices, office_room

logger = logging.getLogger(__name__)


class SidLocks:
    """A fixed set of locks striped by sid: per-session serialisation without a
    per-session object to create and clean up."""

    def __init__(self, stripes: int = 64) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def __call__(self, sid: str) -> threading.Lock:
        return self._locks[zlib.crc32(sid.encode()) % len(self._locks)]


class MembershipWatcher:
    """What an operator's view hears of memberships (metrics, the audit trail); ignores
    all of it by default."""

    def joined(self, member: Session) -> None:
        """`member` entered its office."""

    def left(self, member: Session, reason: str) -> None:
        """`member` left its office: "left", "moved" (joined another), "disconnected", or
        "purged" (its Server node died)."""

    def auth_failed(self, address: str) -> None:
        """A client's credentials were refused."""


class Membership(RegistryListener):
    def __init__(
        self,
        offices: Offices,
        auth: AuthProvider | None,
        on_session_gone: Callable[[str], Any],
        watcher: MembershipWatcher = MembershipWatcher(),
    ) -> None:
        self._watcher = watcher
        self._offices = offices
        self._registry = offices.registry
        self._sio = offices.sio
        self._auth = auth
        self._on_session_gone = on_session_gone
        self._locks = SidLocks()

    def connect(self, sid: str, environ: Mapping[str, Any], auth: Any = None) -> None:
        identity = self._authenticate(sid, environ, auth)
        self._registry.add_session(sid, declared_handshake(environ))
        if identity is not True:
            self._sio.save_session(sid, {"identity": identity}, namespace=NAMESPACE)
        logger.info("session %s connected", sid)

    def disconnect(self, sid: str, reason: Any = None) -> None:
        """Disconnect counts as leave. Runs on an Engine.IO thread: it must not raise."""
        try:
            with self._locks(sid):
                left = self._registry.drop_session(sid)
                if left is not None:
                    self._announce_leave(left, "disconnected")
        except Exception:
            logger.exception("cleaning up session %s failed", sid)
        gone = self._on_session_gone(sid)
        logger.info("session %s disconnected (%s)%s", sid, reason, f"; failed {gone} pending calls" if gone else "")

    def join(self, sid: str, *args: Any) -> None:
        req = parse_payload(EnterOfficeReq, args)
        with self._locks(sid):
            outcome = self._registry.join(sid, req.role, req.name, req.office_id)
            if not outcome.changed:
                return
            if outcome.left is not None:
                assert outcome.left.office_id is not None  # the membership it ended
                self._sio.leave_room(sid, office_room(outcome.left.office_id), namespace=NAMESPACE)
                self._announce_leave(outcome.left, "moved")
            self._sio.enter_room(sid, office_room(req.office_id), namespace=NAMESPACE)
            notice = EnterOfficeNotification(office_id=req.office_id, **{req.role: req.name})
            self._offices.notify(req.office_id, events.ENTER_OFFICE_NOTIFICATION, to_wire(notice), skip_sid=sid)
            self._watcher.joined(outcome.joined)
        logger.info("%s %r (%s) joined office %r", req.role, req.name, sid, req.office_id)

    def leave(self, sid: str, *args: Any) -> None:
        req = parse_payload(LeaveOfficeReq, args)
        with self._locks(sid):
            left = self._registry.leave(sid, req.office_id)
            self._sio.leave_room(sid, office_room(req.office_id), namespace=NAMESPACE)
            self._announce_leave(left, "left")

    def list_room(self, sid: str, *args: Any) -> dict[str, Any]:
        req = parse_payload(ListRoomReq, args)
        caller = self._offices.agent(sid, req.agent)
        if req.office_id != caller.office_id:
            raise OfficeError(
                "an agent may list only its own office",
                code=ErrorCode.CROSS_ROOM_ACCESS,
                details={"office_id": req.office_id},
            )
        sessions = [_session_info(m) for m in self._registry.members(req.office_id)]
        answer: dict[str, Any] = to_wire(ListRoomRet(sessions=sessions, req_id=req.req_id))
        return answer

    # -- what a registry shared with other Server processes reports ---------------------------

    def locked(self, sid: str) -> threading.Lock:
        return self._locks(sid)

    def session_gone(self, sid: str) -> None:
        self._on_session_gone(sid)

    def member_purged(self, member: Session) -> None:
        self._announce_leave(member, "purged")
        self._on_session_gone(member.sid)

    def member_restored(self, member: Session) -> None:
        assert member.office_id is not None and member.role is not None
        notice = EnterOfficeNotification(office_id=member.office_id, **{member.role: member.name})
        self._offices.notify(member.office_id, events.ENTER_OFFICE_NOTIFICATION, to_wire(notice), skip_sid=member.sid)

    def member_refused(self, member: Session) -> None:
        """Its place was taken while Redis had lost it: disconnected, it reconnects and
        joins again (our clients retry a refused join for a while, docs/server/scale-out.md)."""
        self._sio.disconnect(member.sid, namespace=NAMESPACE)

    def _announce_leave(self, left: Session, reason: str) -> None:
        assert left.office_id is not None and left.role is not None
        notice = LeaveOfficeNotification(office_id=left.office_id, **{left.role: left.name})
        self._offices.notify(left.office_id, events.LEAVE_OFFICE_NOTIFICATION, to_wire(notice), skip_sid=left.sid)
        self._watcher.left(left, reason)
        logger.info("%s %r (%s) left office %r", left.role, left.name, left.sid, left.office_id)

    def _authenticate(self, sid: str, environ: Mapping[str, Any], auth: Any) -> Any:
        if self._auth is None:
            return True
        try:
            identity = self._auth.authenticate(environ, auth)
        except Exception:
            logger.exception("auth provider failed for session %s; refusing it", sid)
            identity = False
        if not identity:
            # one line per refusal at debug only: the engine logs counts per address (auth_failures)
            logger.debug("refused connection %s from %s: authentication failed", sid, environ.get("REMOTE_ADDR"))
            self._watcher.auth_failed(str(environ.get("REMOTE_ADDR", "")))
            raise socketio.exceptions.ConnectionRefusedError(str(AuthError("authentication failed")))
        return identity


def _session_info(member: Session) -> SessionInfo:
    assert member.name is not None and member.role is not None and member.office_id is not None  # in the office listed
    return SessionInfo(
        sid=member.sid, name=member.name, role=member.role, office_id=member.office_id, a2c_version=member.handshake.a2c_version
    )
