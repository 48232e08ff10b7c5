"""`SeenMembers`: the members of other Server processes as this one last read them from
Redis, by sid and by office, role and name, so the routing hot path finds a Computer on
another process without a Redis round trip (docs/server/scale-out.md, *Costs*).

An entry is dropped when its member is heard ending, leaving or moving office (the
registry's `gone` and `left` channels), and every entry when that subscription starts
again (what was published while it was down was missed). At most `limit` are kept, the
least recently used forgotten first. Not thread-safe: the registry's lock guards it.
"""

from __future__ import annotations

import collections

from ...protocol.models import Role
from ..offices.office_rules import Session


class SeenMembers:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._by_sid: collections.OrderedDict[str, Session] = collections.OrderedDict()
        self._by_name: dict[tuple[str, Role, str], str] = {}
        #: Counts what was forgotten: a read from Redis that started before a forget may
        #: hold what the forget was about, so it is not remembered (`remember`).
        self.forgotten = 0

    def remember(self, member: Session, seen_at: int) -> None:
        """Keep `member` (joined), read from Redis when `forgotten` was `seen_at`."""
        assert member.office_id is not None and member.role is not None and member.name is not None
        if seen_at != self.forgotten:
            return
        self._drop(member.sid)
        self._by_sid[member.sid] = member
        self._by_name[(member.office_id, member.role, member.name)] = member.sid
        while len(self._by_sid) > self._limit:
            self._drop(next(iter(self._by_sid)))

    def get(self, sid: str) -> Session | None:
        member = self._by_sid.get(sid)
        if member is not None:
            self._by_sid.move_to_end(sid)
        return member

    def named(self, office_id: str, role: Role, name: str) -> Session | None:
        sid = self._by_name.get((office_id, role, name))
        return self.get(sid) if sid is not None else None

    def forget(self, sid: str) -> None:
        self.forgotten += 1
        self._drop(sid)

    def clear(self) -> None:
        self.forgotten += 1
        self._by_sid.clear()
        self._by_name.clear()

    def __len__(self) -> int:
        return len(self._by_sid)

    def _drop(self, sid: str) -> None:
        member = self._by_sid.pop(sid, None)
        if member is not None:
            assert member.office_id is not None and member.role is not None and member.name is not None
            key = (member.office_id, member.role, member.name)
            if self._by_name.get(key) == sid:
                del self._by_name[key]
