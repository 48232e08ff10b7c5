"""The office (room) rules of spec/room-model.md and docs/ARCHITECTURE.md, Wire decisions, as pure functions.

They look only at records, never at storage, so every registry (in memory today, shared
across processes later) applies exactly the same rules inside its own atomic section.
"""

from __future__ import annotations

from typing import Iterable

import attrs

from ...protocol.errors import BadRequestError, ErrorCode, ForbiddenError, OfficeError
from ...protocol.models import Role

#: Longest accepted name / office id: enough for UUIDs and tenant prefixes, bounded so a
#: peer cannot make every notification carry megabytes.
MAX_IDENTIFIER_LENGTH = 256


@attrs.frozen
class Handshake:
    """What a client declared in its connect URL: its protocol version (None: it sent
    none, as official 0.1.x SDKs) and the smcp_sync extension requests it answers."""

    a2c_version: str | None = None
    extensions: frozenset[str] = frozenset()


@attrs.frozen
class Session:
    """One connected Socket.IO session. `role` is fixed by its first join; `name` and
    `office_id` are set while it is in an office; `handshake` for its whole life."""

    sid: str
    role: Role | None = None
    name: str | None = None
    office_id: str | None = None
    handshake: Handshake = Handshake()

    @property
    def joined(self) -> bool:
        return self.office_id is not None


@attrs.frozen
class JoinOutcome:
    """What a join changed: the new membership, the membership it ended (a Computer moving
    office), and whether anything changed at all (a repeated join does not)."""

    joined: Session
    left: Session | None = None
    changed: bool = True


def plan_join(current: Session, role: Role, name: str, office_id: str, office_members: Iterable[Session]) -> JoinOutcome:
    """Decide a `server:join_office`; raise the refusal's `SMCPError`.

    `office_members` are the sessions currently in `office_id`.
    """
    _check_identifier("name", name)
    _check_identifier("office_id", office_id)
    if current.role is not None and current.role != role:
        raise ForbiddenError(
            f"this session joined as {current.role}; its role cannot change to {role}",
            details={"role": current.role},
        )
    if current.office_id == office_id:
        if current.name == name:
            return JoinOutcome(joined=current, changed=False)
        raise ForbiddenError(
            f"already in office {office_id!r} as {current.name!r}; leave it before joining as {name!r}",
            details={"office_id": office_id, "name": current.name},
        )
    if role == "agent" and current.joined:
        raise ForbiddenError(
            f"agent {current.name!r} is in office {current.office_id!r}; leave it before joining {office_id!r}",
            details={"office_id": current.office_id},
        )
    for member in office_members:
        if member.sid == current.sid:
            continue
        if role == "agent" and member.role == "agent":
            raise OfficeError(
                f"office {office_id!r} already has an agent",
                code=ErrorCode.ROOM_FULL,
                details={"office_id": office_id},
            )
        if member.role == role and member.name == name:
            raise ForbiddenError(
                f"a {role} named {name!r} is already in office {office_id!r}",
                details={"office_id": office_id, "name": name, "role": role},
            )
    joined = attrs.evolve(current, role=role, name=name, office_id=office_id)
    return JoinOutcome(joined=joined, left=current if current.joined else None)


def plan_leave(current: Session, office_id: str) -> Session:
    """Decide a `server:leave_office`: the membership that ends; raise 4103 if there is none."""
    if current.office_id != office_id:
        where = f"it is in {current.office_id!r}" if current.joined else "it has not joined any office"
        raise OfficeError(
            f"cannot leave office {office_id!r}: {where}",
            code=ErrorCode.NOT_IN_ROOM,
            details={"office_id": office_id},
        )
    return current


def _check_identifier(field: str, value: str) -> None:
    if not value.strip():
        raise BadRequestError(f"{field} must not be empty @ $.{field}", details={"errors": [f"empty @ $.{field}"]})
    check_identifier_length(field, value)


def check_identifier_length(field: str, value: str) -> None:
    """400 for an identifier no session can have: refusals quote identifiers, and must not
    echo megabytes back to the caller (or into the log)."""
    if len(value) > MAX_IDENTIFIER_LENGTH:
        raise BadRequestError(
            f"{field} is longer than {MAX_IDENTIFIER_LENGTH} characters @ $.{field}",
            details={"errors": [f"longer than {MAX_IDENTIFIER_LENGTH} characters @ $.{field}"]},
        )
