"""Recovery at size through two Server nodes in this process on a real `redis-server`:
one node holds thousands of members; Redis loses everything (FLUSHALL, then an empty
restart); the other node sees every office whole again within a bound, and its Agents
are told each member entering once, never leaving (no enter/leave storm, issue 32).

Members: an Agent on node B and two Computers on node A per office are real clients
(through the Server's join path); the rest of A's members are joined through A's
registry directly (thousands of real clients would cost CI more than they test here).
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import SMCPServer
from smcp_sync.protocol import events
from smcp_sync.server import RedisOptions, ServerLimits

from .parts import redis_server
from .test_recovery import heartbeats_seen, populate

pytestmark = pytest.mark.timeout(240)

TIMEOUT = 20.0
#: Bound for every office to be whole again as the other node sees it (10,000 members
#: take ~3 s on loopback: benchmarks/README.md, recovery).
CONVERGE = 30.0
PER_OFFICE = 30
REAL_COMPUTERS = 2


class Notices:
    """The enter and leave notifications an office's Agent received, counted by office."""

    def __init__(self) -> None:
        self.entered: collections.Counter[str] = collections.Counter()
        self.left: collections.Counter[str] = collections.Counter()

    def handlers(self) -> dict[str, Any]:
        return {
            events.ENTER_OFFICE_NOTIFICATION: lambda notice: self.entered.update([notice["office_id"]]),
            events.LEAVE_OFFICE_NOTIFICATION: lambda notice: self.left.update([notice["office_id"]]),
        }

    def clear(self) -> None:
        self.entered.clear()
        self.left.clear()


@pytest.mark.parametrize("members", [600, pytest.param(3_000, marks=pytest.mark.once)])
def test_a_node_with_thousands_of_members_recovers_once_after_redis_loses_them(members: int, no_leaks: None) -> None:
    offices = members // PER_OFFICE
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        # every client comes from 127.0.0.1: no cap per address
        a = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url), limits=ServerLimits(max_connections_per_ip=None)))
        b = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url), limits=ServerLimits(max_connections_per_ip=None)))
        a.start(), b.start()
        notices = Notices()
        agents = [
            stack.enter_context(joined_connection("agent", "agent", b.url, f"o{i}", timeout=TIMEOUT, handlers=notices.handlers()))
            for i in range(offices)
        ]
        real = [
            stack.enter_context(joined_connection("computer", f"real-{k}", a.url, f"o{i}", timeout=TIMEOUT))
            for i in range(offices)
            for k in range(REAL_COMPUTERS)
        ]
        populate(a.registry, offices * (PER_OFFICE - REAL_COMPUTERS), per_office=PER_OFFICE - REAL_COMPUTERS)
        whole = lambda: all(len(b.registry.members(f"o{i}")) == PER_OFFICE + 1 for i in range(offices))  # noqa: E731
        wait_until(whole, CONVERGE, "every office whole")
        sids = [connection.sid for connection in agents + real]

        for lose in ("FLUSHALL", "restart"):
            notices.clear()
            incarnation = a.registry.incarnation
            if lose == "FLUSHALL":
                redis.command("FLUSHALL")
            else:
                redis.stop()
                redis.start()  # empty: no persistence
            wait_until(lambda: a.registry.incarnation != incarnation, TIMEOUT, "the loss seen")
            wait_until(whole, CONVERGE, f"every office whole after {lose}")
            heartbeats_seen(redis, a.registry, 2)  # and it stays so: no write-back starts over
            assert all(len(b.registry.members(f"o{i}")) == PER_OFFICE + 1 for i in range(offices))
            assert notices.left == {}, lose
            if lose == "FLUSHALL":  # each member's enter told once
                assert notices.entered == {f"o{i}": PER_OFFICE for i in range(offices)}
            else:  # what was published before node B listened again is lost: at most once
                assert all(count <= PER_OFFICE for count in notices.entered.values()), notices.entered
        assert [connection.sid for connection in agents + real] == sids  # nobody was disconnected
        assert all(connection.connected for connection in agents + real)
