"""The office registry's recovery model against a real `redis-server`, one `RedisRegistry`
per node in this process (beats driven by the test): what Redis loses, rolls back or
keeps of dead incarnations never changes who is in an office (redis_registry.py).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from computer.helpers import wait_until

from smcp_sync.protocol.errors import ErrorCode, SMCPError
from smcp_sync.server.handlers.membership import SidLocks
from smcp_sync.server.offices.office_rules import Session
from smcp_sync.server.scale_out.redis_registry import RedisRegistry
from smcp_sync.server.offices.registry import RegistryListener

from .parts import populate, redis_server

pytestmark = pytest.mark.timeout(120)

#: Heartbeat threads idle (a beat every 900 s): the test beats. Members count while alive.
IDLE_TTL = 3600.0


class Listener(RegistryListener):
    """What the Server's `Membership` is to a registry: per-session locks, and a record
    of what the registry reports."""

    def __init__(self) -> None:
        self._locks = SidLocks()
        self.purged: list[Session] = []
        self.restored: list[Session] = []
        self.refused: list[Session] = []

    def locked(self, sid: str) -> threading.Lock:
        return self._locks(sid)

    def session_gone(self, sid: str) -> None:
        pass

    def member_purged(self, member: Session) -> None:
        self.purged.append(member)

    def member_restored(self, member: Session) -> None:
        self.restored.append(member)

    def member_refused(self, member: Session) -> None:
        self.refused.append(member)


@contextlib.contextmanager
def node(url: str, node_ttl: float = IDLE_TTL, prefix: str | None = None) -> Iterator[tuple[RedisRegistry, Listener]]:
    registry, listener = RedisRegistry(url, node_ttl=node_ttl, prefix=prefix), Listener()
    registry.attach(listener)
    try:
        yield registry, listener
    finally:
        registry.close()


def joined(registry: RedisRegistry, sid: str, role: Any, name: str, office: str) -> None:
    registry.add_session(sid)
    registry.join(sid, role, name, office)


def seen(registry: RedisRegistry, office: str) -> set[tuple[str, str | None, str | None]]:
    return {(m.sid, m.role, m.name) for m in registry.members(office)}


def test_a_join_before_the_heartbeat_neither_hides_nor_revives_lost_members() -> None:
    with redis_server() as redis, node(redis.url) as (a, _), node(redis.url) as (b, _):
        joined(a, "a1", "computer", "pc", "o1")
        joined(b, "b1", "agent", "agent", "o1")
        redis.command("FLUSHALL")

        a.add_session("a2")
        with pytest.raises(SMCPError) as refused:
            a.join("a2", "computer", "pc2", "o2")
        assert refused.value.code == ErrorCode.INTERNAL_ERROR and "recovering" in refused.value.message
        assert redis.command("KEYS", a.prefix + "alive:*") == []  # a join never says a node is alive

        a.beat()
        b.beat()
        assert seen(b, "o1") == seen(a, "o1") == {("a1", "computer", "pc"), ("b1", "agent", "agent")}
        assert b.find("o1", "computer", "pc") == Session(sid="a1", role="computer", name="pc", office_id="o1")
        joined(a, "a3", "computer", "pc3", "o1")
        a.add_session("a4")
        with pytest.raises(SMCPError) as second_agent:
            a.join("a4", "agent", "agent-2", "o1")
        assert second_agent.value.code == ErrorCode.ROOM_FULL


def test_a_redis_restored_from_a_snapshot_brings_no_ghost_back(tmp_path: Path) -> None:
    with redis_server(data_dir=tmp_path) as redis, node(redis.url) as (a, a_told), node(redis.url) as (b, b_told):
        joined(a, "a1", "computer", "pc1", "o")
        joined(a, "a2", "computer", "pc2", "o")
        joined(b, "b1", "agent", "agent", "o")
        redis.snapshot()
        assert a.drop_session("a2") is not None  # ended after the snapshot
        assert b.drop_session("b1") is not None
        joined(b, "b2", "agent", "agent", "o")  # the agent that replaced b1
        redis.stop()
        redis.start()  # loads the snapshot: a2 and b1 are in it, b2 is not
        assert redis.command("EXISTS", a.prefix + "s:a2") == 1

        for registry in (a, b, a, b):  # two rounds: each node sees the other's write-back
            registry.beat()
        assert seen(a, "o") == seen(b, "o") == {("a1", "computer", "pc1"), ("b2", "agent", "agent")}
        assert a.find("o", "computer", "pc2") is None and b.find("o", "computer", "pc2") is None
        assert a_told.refused == b_told.refused == []  # the live replacement was not refused
        assert a_told.purged == b_told.purged == []  # ghosts go silently: their leave was told long ago
        assert redis.command("EXISTS", a.prefix + "s:a2") == 0


@pytest.mark.parametrize("rounds", [20, pytest.param(300, marks=pytest.mark.once)])
def test_a_write_back_never_undoes_a_disconnect_or_an_office_switch(rounds: int) -> None:
    """Redis loses everything while sessions end and Computers move office; the write-back
    and that live traffic race (as the heartbeat and handler threads do in a Server)."""
    sessions = 8
    with redis_server() as redis, node(redis.url) as (a, listener), node(redis.url) as (b, _):
        for round_ in range(rounds):
            office, elsewhere = f"r{round_}", f"r{round_}-moved"
            sids = [f"r{round_}-s{i}" for i in range(sessions)]
            for i, sid in enumerate(sids):
                joined(a, sid, "computer", f"pc{i}", office)
            redis.command("FLUSHALL")
            ending, moving = sids[::2], sids[1::2]

            def live_traffic() -> None:
                for sid in sids:
                    with listener.locked(sid):  # as Membership.disconnect and join hold it
                        if sid in ending:
                            a.drop_session(sid)
                        else:
                            with contextlib.suppress(SMCPError):  # 500 until the first beat is through
                                a.join(sid, "computer", f"pc{sids.index(sid)}", elsewhere)

            traffic = threading.Thread(target=live_traffic)
            traffic.start()
            a.beat()
            traffic.join(30)
            assert not traffic.is_alive()
            a.beat()  # what the first beat left (sessions it could not lock yet) is done now
            b.beat()

            truth: dict[str, set[Any]] = {office: set(), elsewhere: set()}
            for sid in moving:  # where each is by its node's memory (the switch may have met a 500)
                current = a.session(sid)
                assert current is not None and current.office_id in truth
                truth[current.office_id].add((sid, "computer", current.name))
            for where, expected in truth.items():
                assert seen(b, where) == expected, (round_, where)
                for sid, _, name in expected:
                    assert b.find(where, "computer", name) is not None
                    assert b.find(office if where == elsewhere else elsewhere, "computer", name) is None
            assert listener.refused == []
            for sid in moving:
                a.drop_session(sid)


def test_a_client_back_after_its_node_died_takes_the_place_of_its_old_session() -> None:
    with redis_server() as redis, node(redis.url) as (b, b_told):
        dead = RedisRegistry(redis.url, node_ttl=1.0)  # never attached: no heartbeat after this beat
        try:
            dead.beat()
            joined(dead, "old", "computer", "pc", "o")
            b.add_session("new")
            with pytest.raises(SMCPError) as taken:  # its node is still alive: a different, live session
                b.join("new", "computer", "pc", "o")
            assert taken.value.code == ErrorCode.FORBIDDEN

            redis.command("DEL", dead.prefix + f"alive:{dead.incarnation}")  # as when its TTL runs out
            b.join("new", "computer", "pc", "o")
            assert seen(b, "o") == {("new", "computer", "pc")}
            assert [m.sid for m in b_told.purged] == ["old"]  # its leave is announced, once
            b.beat()
            assert [m.sid for m in b_told.purged] == ["old"]
            assert redis.command("EXISTS", dead.prefix + "s:old") == 0
        finally:
            dead.close()


def test_deployments_on_one_redis_never_see_each_other(caplog: pytest.LogCaptureFixture) -> None:
    with redis_server() as redis, node(redis.url, prefix="d1:") as (one, _), node(redis.url, prefix="d2:") as (two, _):
        joined(one, "s1", "agent", "agent", "office")
        joined(two, "s2", "agent", "agent", "office")  # the same office id, another deployment
        assert seen(one, "office") == {("s1", "agent", "agent")}
        assert seen(two, "office") == {("s2", "agent", "agent")}
        keys = {key.decode() for key in redis.command("KEYS", "*")}
        assert keys and all(key.startswith(("d1:", "d2:")) for key in keys)

    assert RedisRegistry("redis://127.0.0.1:1/0").prefix == "smcp:0:"
    assert RedisRegistry("redis://127.0.0.1:1/3").prefix == "smcp:3:"
    for bad in ("", "has space", "x" * 65):
        with pytest.raises(ValueError, match="redis_prefix"):
            RedisRegistry("redis://127.0.0.1:1/0", prefix=bad)

    caplog.set_level(logging.INFO, logger="smcp_sync")
    unreachable = RedisRegistry("redis://user:s3cret@127.0.0.1:1/0")
    unreachable.add_session("s")
    with pytest.raises(SMCPError) as down:
        unreachable.join("s", "agent", "agent", "o")
    assert down.value.code == ErrorCode.INTERNAL_ERROR
    assert "127.0.0.1:1" in caplog.text and "s3cret" not in caplog.text and "<redacted>@" in caplog.text
    unreachable.close()


def test_a_member_found_on_another_node_is_known_without_a_round_trip_until_it_ends() -> None:
    """Routing asks `session()` right after `find`: answered from what find saw, and None
    once the session's end is heard on the `gone` channel."""
    with redis_server() as redis, node(redis.url) as (a, _), node(redis.url) as (b, _):
        joined(a, "pc-sid", "computer", "pc", "o")
        found = b.find("o", "computer", "pc")
        assert found is not None and found.sid == "pc-sid"
        redis.command("CLIENT", "PAUSE", "3000")  # Redis answers nobody for 3 s
        assert b.session("pc-sid") == found  # no round trip
        redis.command("CLIENT", "UNPAUSE")
        assert a.drop_session("pc-sid") is not None
        wait_until(lambda: b.session("pc-sid") is None, 10.0, "the end heard")
        assert b.find("o", "computer", "pc") is None


def test_a_member_purged_with_its_node_and_written_back_is_found_and_known_again() -> None:
    """A node declared dead (its heartbeat expired: a long stall) comes back: its
    members, announced gone, are written back, and routing reaches them again."""
    with redis_server() as redis, node(redis.url) as (a, _), node(redis.url) as (b, b_told):
        joined(a, "pc-sid", "computer", "pc", "o")
        assert b.find("o", "computer", "pc") is not None
        redis.command("DEL", a.prefix + f"alive:{a.incarnation}")  # as when its TTL runs out
        b.beat()  # purges a's members, announces them gone
        assert [m.sid for m in b_told.purged] == ["pc-sid"]
        wait_until(lambda: b.session("pc-sid") is None, 10.0, "the end heard")
        a.beat()  # a sees it was declared dead: a new incarnation writes pc back
        assert b.find("o", "computer", "pc") is not None
        assert b.session("pc-sid") is not None


def test_where_a_member_of_another_node_is_is_remembered_until_it_leaves_or_moves() -> None:
    """Routing recalls a Computer of another node without a round trip once found, until
    it is heard moving or leaving (the `left` channel), and forgets every such place when
    its subscription is cut (what was published meanwhile was missed)."""
    with redis_server() as redis, node(redis.url) as (a, _), node(redis.url) as (b, _):
        joined(a, "pc-sid", "computer", "pc", "o")
        assert b.recall("o", "computer", "pc") == (False, None)  # never seen: only find can tell
        # b's subscription starting (one confirmation per channel) forgets what was found
        # before it: wait for it, as a find right after the node started may precede it
        remembered = lambda: b.find("o", "computer", "pc") is not None and b.recall("o", "computer", "pc")[0]  # noqa: E731
        wait_until(remembered, 10.0, "b subscribed")
        found = b.find("o", "computer", "pc")
        assert found is not None and b.recall("o", "computer", "pc") == (True, found)

        a.join("pc-sid", "computer", "pc", "p")  # moves office
        wait_until(lambda: b.recall("o", "computer", "pc") == (False, None), 10.0, "the move heard")
        assert b.find("o", "computer", "pc") is None
        moved = b.find("p", "computer", "pc")
        assert moved is not None and moved.office_id == "p" and b.recall("p", "computer", "pc") == (True, moved)

        a.leave("pc-sid", "p")
        wait_until(lambda: b.recall("p", "computer", "pc") == (False, None), 10.0, "the leave heard")
        assert b.find("p", "computer", "pc") is None

        a.join("pc-sid", "computer", "pc", "o")
        assert b.find("o", "computer", "pc") is not None and b.recall("o", "computer", "pc")[0]
        redis.command("CLIENT", "KILL", "TYPE", "pubsub")
        wait_until(lambda: b.recall("o", "computer", "pc") == (False, None), 10.0, "forgotten on resubscribing")


def heartbeats_seen(redis: Any, registry: RedisRegistry, count: int) -> None:
    """Wait until `registry`'s heartbeat has refreshed its alive key `count` times."""
    key = registry.prefix + f"alive:{registry.incarnation}"
    last = [redis.command("PTTL", key)]

    def refreshed() -> bool:
        ttl = redis.command("PTTL", key)
        rose, last[0] = ttl > last[0], ttl
        return bool(rose)

    for _ in range(count):
        wait_until(refreshed, 4 * registry.node_ttl, "a heartbeat")


def test_more_members_than_one_ttl_could_write_back_one_by_one_come_back_and_nobody_is_purged() -> None:
    """2,000 members, one node, a 2 s TTL: written back one transaction of ~9 round trips
    each (~400 a second), the write-back outlasted the TTL, the other node purged the
    writer mid-way and the next beat started over, for ever (issue 32). Batched, with the
    heartbeat refreshed between batches, it converges once; then the writer dies and its
    members are purged, each announced once, nothing left behind."""
    members, ttl = 2_000, 2.0
    with redis_server() as redis, node(redis.url, node_ttl=ttl) as (b, b_told):
        a, a_told = RedisRegistry(redis.url, node_ttl=ttl), Listener()
        try:
            a.attach(a_told)
            offices = populate(a, members, per_office=10)
            before = a.incarnation
            redis.command("FLUSHALL")
            wait_until(lambda: a.incarnation != before, 10 * ttl, "a new incarnation")
            written = a.prefix + f"n:{a.incarnation}"
            wait_until(lambda: redis.command("SCARD", written) == members, 30.0, "every member written back")
            heartbeats_seen(redis, a, 2)
            assert b_told.purged == [] and a_told.refused == []
            assert len(a_told.restored) == members  # once each: the write-back never started over
            assert all({m.sid for m in b.members(office)} == sids for office, sids in offices.items())
        finally:
            a.close()  # its members are left in Redis: dead now
        wait_until(lambda: len(b_told.purged) == members, 30.0, "the dead node's members purged")
        assert sorted(m.sid for m in b_told.purged) == sorted(sid for sids in offices.values() for sid in sids)
        assert redis.command("KEYS", b.prefix + "s:*") == [] and redis.command("KEYS", b.prefix + "o:*") == []
        assert redis.command("HKEYS", b.prefix + "nodes") == [b.incarnation.encode()]
