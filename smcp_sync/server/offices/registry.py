"""Where the Server keeps sessions and offices: one small interface, one in-memory version.

Everything else in the Server reads and changes membership only through `OfficeRegistry`,
so a registry shared by several Server processes (e.g. in Redis) can replace the
in-memory one without touching the handlers. Implementations apply the rules of
`office_rules` atomically and return what changed, so callers emit notifications
outside any registry lock.
"""

from __future__ import annotations

import abc
import threading
from typing import Any, ContextManager, Protocol

import attrs

from ...protocol.errors import NotFoundError
from ...protocol.models import Role
from .office_rules import Handshake, JoinOutcome, Session, plan_join, plan_leave


class RegistryListener(abc.ABC):
    """What a registry shared by several Server processes tells this process about
    sessions of the others (`Membership` implements it)."""

    @abc.abstractmethod
    def locked(self, sid: str) -> ContextManager[Any]:
        """The lock held while `sid`'s membership changes: a registry writing members back
        holds it too, so a write-back never races the session's own join, leave or end."""

    @abc.abstractmethod
    def session_gone(self, sid: str) -> None:
        """A session disconnected, on any process: requests forwarded to it must fail now."""

    @abc.abstractmethod
    def member_purged(self, member: Session) -> None:
        """A member of a dead process was removed by this one: announce its leave."""

    @abc.abstractmethod
    def member_restored(self, member: Session) -> None:
        """A member of this process was written back after the shared registry lost it."""

    @abc.abstractmethod
    def member_refused(self, member: Session) -> None:
        """A member of this process could not be written back (its place was taken)."""


class RegistryObserver(Protocol):
    """What a registry shared through Redis reports of its health (metrics)."""

    def looked_up(self, seconds: float) -> None:
        """A member of another process was looked up in the shared registry."""

    def epoch_changed(self) -> None:
        """The shared registry lost this process's records: it writes them back."""

    def written_back(self, refused: bool) -> None:
        """A member was written back (or `refused`: its place was taken meanwhile)."""

    def purged(self) -> None:
        """A member of a dead process was purged by this one."""


class OfficeRegistry(abc.ABC):
    """Sessions (one per connected Socket.IO sid) and the offices they have joined."""

    #: Told of the shared registry's health, when set (`GET /metrics`).
    observer: RegistryObserver | None = None

    #: Every call is answered from this process's memory, never waiting on I/O: the
    #: Server then runs its own requests (join, list, notify) on the thread that read
    #: them, without handing them to its handler pool.
    in_process: bool = False

    def attach(self, listener: RegistryListener) -> None:
        """Start the registry's background work, reporting to `listener` (shared registries)."""

    def close(self) -> None:
        """Stop what `attach` started."""

    @abc.abstractmethod
    def add_session(self, sid: str, handshake: Handshake = Handshake()) -> None:
        """Record a freshly connected session (not in any office yet)."""

    @abc.abstractmethod
    def drop_session(self, sid: str) -> Session | None:
        """Forget a disconnected session; return its membership if it was in an office."""

    @abc.abstractmethod
    def session(self, sid: str) -> Session | None:
        """The session's current record, or None when it is not connected."""

    @abc.abstractmethod
    def join(self, sid: str, role: Role, name: str, office_id: str) -> JoinOutcome:
        """Apply `office_rules.plan_join`; raise its refusal (or 404 for an unknown sid)."""

    @abc.abstractmethod
    def leave(self, sid: str, office_id: str) -> Session:
        """Apply `office_rules.plan_leave`; return the membership that ended."""

    @abc.abstractmethod
    def find(self, office_id: str, role: Role, name: str) -> Session | None:
        """The member of `office_id` with that role and name."""

    def recall(self, office_id: str, role: Role, name: str) -> tuple[bool, Session | None]:
        """``(True, member or None)`` when this process knows without waiting on anything;
        ``(False, None)`` when only `find` can tell, which may wait on a shared registry
        (routing then asks it off the thread reading the caller's socket)."""
        return True, self.find(office_id, role, name)

    @abc.abstractmethod
    def members(self, office_id: str) -> list[Session]:
        """Everyone in `office_id`, in the order they joined."""

    def readiness(self) -> dict[str, Any]:
        """Whether joins can be taken now (`ready`), with what tells (`GET /health/ready`);
        never waits on I/O."""
        return {"ready": True, "kind": "in-process" if self.in_process else type(self).__name__}

    def local_sessions(self) -> list[Session]:
        """The sessions connected to this process (what `GET /metrics` counts by role);
        a registry that cannot tell lists none."""
        return []


class InMemoryRegistry(OfficeRegistry):
    """The registry of a single Server process, guarded by one lock."""

    in_process = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        # office_id -> {sid: None}: an insertion-ordered set of member sids.
        self._offices: dict[str, dict[str, None]] = {}
        self._by_name: dict[tuple[str, Role, str], str] = {}

    def add_session(self, sid: str, handshake: Handshake = Handshake()) -> None:
        with self._lock:
            self._sessions.setdefault(sid, Session(sid=sid, handshake=handshake))

    def drop_session(self, sid: str) -> Session | None:
        with self._lock:
            current = self._sessions.pop(sid, None)
            if current is None or not current.joined:
                return None
            self._remove_member(current)
            return current

    def session(self, sid: str) -> Session | None:
        with self._lock:
            return self._sessions.get(sid)

    def join(self, sid: str, role: Role, name: str, office_id: str) -> JoinOutcome:
        with self._lock:
            current = self._connected(sid)
            outcome = plan_join(current, role, name, office_id, self._members(office_id))
            if outcome.changed:
                if outcome.left is not None:
                    self._remove_member(outcome.left)
                self._sessions[sid] = outcome.joined
                self._offices.setdefault(office_id, {})[sid] = None
                self._by_name[(office_id, role, name)] = sid
            return outcome

    def leave(self, sid: str, office_id: str) -> Session:
        with self._lock:
            left = plan_leave(self._connected(sid), office_id)
            self._remove_member(left)
            self._sessions[sid] = attrs.evolve(left, name=None, office_id=None)
            return left

    def find(self, office_id: str, role: Role, name: str) -> Session | None:
        with self._lock:
            sid = self._by_name.get((office_id, role, name))
            return self._sessions.get(sid) if sid is not None else None

    def members(self, office_id: str) -> list[Session]:
        with self._lock:
            return self._members(office_id)

    def local_sessions(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    # -- helpers; the caller holds the lock ----------------------------------------------

    def _connected(self, sid: str) -> Session:
        current = self._sessions.get(sid)
        if current is None:
            raise NotFoundError("this session is not connected", details={"sid": sid})
        return current

    def _members(self, office_id: str) -> list[Session]:
        return [self._sessions[sid] for sid in self._offices.get(office_id, ())]

    def _remove_member(self, member: Session) -> None:
        assert member.office_id is not None and member.role is not None and member.name is not None
        sids = self._offices.get(member.office_id, {})
        sids.pop(member.sid, None)
        if not sids:
            self._offices.pop(member.office_id, None)
        self._by_name.pop((member.office_id, member.role, member.name), None)
