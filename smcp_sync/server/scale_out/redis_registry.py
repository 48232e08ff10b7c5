"""`RedisRegistry`: the office registry in Redis, shared by several Server processes.

Each process (node) keeps its own sessions in memory, the authority for them (only their
node changes them), and writes the joined ones to Redis for the others. A join reads the
target office under `WATCH`, decides with `office_rules.plan_join` and writes in one
`MULTI` (retried when another node changed the office meanwhile). Removals are Lua
scripts, so a dead node's members are purged, and announced, by exactly one survivor.

Recovery (docs/server/scale-out.md). Redis's data has an *epoch*: a token naming the Redis
process (its `run_id`) that holds it. A restart (empty or from a snapshot), a flush or a
Sentinel failover (another Redis process) loses it, and the first node to see that
writes a new one. A node writes under an
*incarnation* of its own in one epoch; every record names both. Only the heartbeat
asserts an incarnation alive (``alive:{incarnation}`` holds the epoch, expiring after
`node_ttl`); a record counts only while its incarnation is alive in the current epoch,
so records of dead incarnations (a killed node, a snapshot's ghosts) are never seen
again, whatever Redis still holds. When the epoch changes, or its incarnation was
declared dead, a node starts a new incarnation and writes its members back from its
memory, in batches of one transaction each, under the sessions' own locks (those live
joins and leaves take) and the office rules, its heartbeat refreshed before each batch
(so no other node purges it mid-way: time linear in members); what fails is retried on
the next beat. A dead incarnation's members are purged in batches too.

Keys (after the deployment's prefix, `redis_deployment`): ``epoch``; ``s:{sid}`` a joined
session (JSON); ``o:{office}`` its members (sorted set, scored by the ``order`` counter
at join); ``n:{incarnation}`` an incarnation's sids; ``alive:{incarnation}``; ``nodes``
(incarnation -> its epoch). Channel ``gone`` carries the sid of every session that ends,
so the nodes fail requests forwarded to it at once; ``left`` the sid of every member that
leaves or moves office, so the nodes forget where they saw it (`seen_members`). Redis Cluster is not supported
(scripts touch keys they compute).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Iterator

import attrs
from redis.exceptions import RedisError, WatchError

from ...protocol.errors import InternalError, NotFoundError, SMCPError
from ...protocol.models import Role
from ...protocol.redaction import redact_url
from ..offices.office_rules import Handshake, JoinOutcome, Session, plan_join, plan_leave
from ..offices.registry import OfficeRegistry, RegistryListener
from .redis_connection import redis_client
from .redis_deployment import deployment_prefix
from .redis_options import DEFAULT_NODE_TTL
from .seen_members import SeenMembers

logger = logging.getLogger(__name__)

#: Members of other nodes remembered from `find` (and sessions heard ending), at most.
REMEMBERED = 10_000
#: Members written back in one Redis transaction, and purged by one script call: one
#: round trip per batch, each short enough to hold neither Redis nor live traffic up.
WRITE_BACK_BATCH = 256
PURGE_BATCH = 1_000

_REMOVE = """
local function remove(p, sid)
  local raw = redis.call('GET', p .. 's:' .. sid)
  if not raw then return false end
  local s = cjson.decode(raw)
  redis.call('DEL', p .. 's:' .. sid)
  redis.call('SREM', p .. 'n:' .. s.node, sid)
  redis.call('ZREM', p .. 'o:' .. s.office_id, sid)
  return raw
end
"""

#: Whether a record counts: its incarnation is alive in the current epoch.
_LIVE = """
local function live(p, s, epoch)
  return epoch and s.epoch == epoch and redis.call('GET', p .. 'alive:' .. s.node) == epoch
end
"""

#: Drop a session that ended (ARGV: prefix, sid); tell every node.
_DROP = _REMOVE + """
local raw = remove(ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[1] .. 'gone', ARGV[2])
return raw
"""

#: Remove at most ARGV[2] members of incarnations not alive in the current epoch; return
#: those of the current epoch (they were live: their leave is announced), then 1 when
#: members may be left (called again), else 0. Records of an older epoch (a snapshot's
#: ghosts, members written back since) go silently. Atomic: two survivors running it at
#: once cannot both get (and announce) the same member; bounded, so a dead node of
#: 10,000 members never holds Redis up for one long script.
_PURGE = _REMOVE + """
local p, limit = ARGV[1], tonumber(ARGV[2])
local epoch = redis.call('GET', p .. 'epoch')
local purged = {}
local taken = 0
local nodes = redis.call('HGETALL', p .. 'nodes')
for i = 1, #nodes, 2 do
  local node, node_epoch = nodes[i], nodes[i + 1]
  if node_epoch ~= epoch or redis.call('GET', p .. 'alive:' .. node) ~= epoch then
    for _, sid in ipairs(redis.call('SPOP', p .. 'n:' .. node, limit - taken)) do
      taken = taken + 1
      local raw = redis.call('GET', p .. 's:' .. sid)
      if raw and cjson.decode(raw).node == node then
        remove(p, sid)
        if node_epoch == epoch then
          table.insert(purged, raw)
          redis.call('PUBLISH', p .. 'gone', sid)
        end
      end
    end
    if redis.call('SCARD', p .. 'n:' .. node) > 0 then
      table.insert(purged, 1)
      return purged
    end
    redis.call('HDEL', p .. 'nodes', node)
  end
end
table.insert(purged, 0)
return purged
"""

#: The live members of an office in join order (ARGV: prefix, office).
_MEMBERS = _LIVE + """
local p, office = ARGV[1], ARGV[2]
local epoch = redis.call('GET', p .. 'epoch')
local out = {}
for _, sid in ipairs(redis.call('ZRANGE', p .. 'o:' .. office, 0, -1)) do
  local raw = redis.call('GET', p .. 's:' .. sid)
  if raw then
    local s = cjson.decode(raw)
    if s.office_id == office and live(p, s, epoch) then table.insert(out, raw) end
  end
end
return out
"""

#: The live member of an office with a role and name (ARGV: prefix, office, role, name).
_FIND = _LIVE + """
local p, office = ARGV[1], ARGV[2]
local epoch = redis.call('GET', p .. 'epoch')
for _, sid in ipairs(redis.call('ZRANGE', p .. 'o:' .. office, 0, -1)) do
  local raw = redis.call('GET', p .. 's:' .. sid)
  if raw then
    local s = cjson.decode(raw)
    if s.office_id == office and s.role == ARGV[3] and s.name == ARGV[4] and live(p, s, epoch) then return raw end
  end
end
return false
"""

#: The epoch (ARGV: key, this Redis's ``run_id:``, a new token): the stored one if this
#: Redis process wrote it, else the new one, stored.
_EPOCH = """
local current = redis.call('GET', ARGV[1])
if current and string.sub(current, 1, #ARGV[2]) == ARGV[2] then return current end
redis.call('SET', ARGV[1], ARGV[3])
return ARGV[3]
"""

#: Refresh an incarnation's heartbeat (ARGV: key, epoch, ttl ms) if it is alive in that
#: epoch; 0 if it is not (expired: declared dead, or Redis lost it).
_REFRESH = """
if redis.call('GET', ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('PEXPIRE', ARGV[1], ARGV[3])
return 1
"""


class RegistryUnavailableError(InternalError):
    """Redis cannot be reached, or this node has not yet written its members back to a
    Redis that lost them: the change was not made."""


@attrs.frozen
class _Written:
    """What `_write_join` did: the outcome, the incarnation it wrote under, and members of
    dead incarnations it took out of the office (to announce their leave)."""

    outcome: JoinOutcome
    incarnation: str
    replaced: list[Session]


@attrs.frozen
class _WrittenBack:
    """What a write-back batch did: the members written (their enter is announced) and
    members of dead incarnations it took out of their offices (their leave is)."""

    restored: list[Session]
    replaced: list[Session]


@attrs.define
class _OfficeView:
    """An office as Redis has it (`_sorted_out`): its live members, records of dead
    incarnations (or older epochs) as (sid, record), sids listed without a record there."""

    present: list[Session] = attrs.Factory(list)
    dead: list[tuple[str, dict[str, Any]]] = attrs.Factory(list)
    absent: list[str] = attrs.Factory(list)


class RedisRegistry(OfficeRegistry):
    """Offices shared through Redis by every Server process given the same `url` and
    `prefix` (default: from the URL's database, `redis_deployment`)."""

    def __init__(self, url: str, *, node_ttl: float = DEFAULT_NODE_TTL, prefix: str | None = None) -> None:
        if node_ttl < 1:
            raise ValueError("node_ttl must be >= 1 second")
        self.node_ttl = node_ttl
        self._prefix = deployment_prefix(url, prefix)
        self._url = url
        self._where = redact_url(url)
        self._connect()
        self._lock = threading.Lock()
        self._local: dict[str, Session] = {}
        self._local_names: dict[tuple[str, Role, str], str] = {}
        self._unsynced_drops: set[str] = set()
        # Members of other nodes as `find` last saw them, and sessions heard ending since
        # (the `gone` channel): `recall()` and `session()` answer for them without a round trip.
        self._seen = SeenMembers(REMEMBERED)
        self._ended: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._epoch: str | None = None
        self.incarnation = uuid.uuid4().hex
        self._unwritten: set[str] = set()  # members to write back in this incarnation
        self._listener: RegistryListener | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._reachable = True
        self._last_beat: float | None = None  # time.monotonic() of the last heartbeat that completed
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()  # taken only in a forked child: never held at a fork

    @property
    def prefix(self) -> str:
        """The deployment's prefix of every key and channel."""
        return self._prefix

    # -- the OfficeRegistry interface --------------------------------------------------------

    def add_session(self, sid: str, handshake: Handshake = Handshake()) -> None:
        if self._pid != os.getpid():
            self._become_forked_node()
        with self._lock:
            self._local.setdefault(sid, Session(sid=sid, handshake=handshake))

    def drop_session(self, sid: str) -> Session | None:
        with self._lock:
            current = self._local.pop(sid, None)
            if current is not None and current.joined:
                self._forget_name(current)
        if current is None:
            return None
        if current.role is not None:  # it may be in Redis, or have calls waiting on it elsewhere
            try:
                self._drop(args=[self._prefix, sid])
            except RedisError as exc:
                logger.warning("registry: cannot drop session %s now (%s); retrying with the heartbeat", sid, exc)
                with self._lock:
                    self._unsynced_drops.add(sid)
        return current if current.joined else None

    def session(self, sid: str) -> Session | None:
        """This node's sessions from memory; one of another node as `find` last saw it
        (the routing hot path asks right after a find), unless it was heard ending since;
        any other from Redis."""
        with self._lock:
            known = self._local.get(sid) or self._seen.get(sid)
            if known is not None or sid in self._ended:
                return known
        with self._available():
            raw = self._redis.get(self._key("s", sid))
        return _decode(raw) if raw else None

    def join(self, sid: str, role: Role, name: str, office_id: str) -> JoinOutcome:
        with self._lock:
            current = self._connected(sid)
        with self._available():
            written = self._write_join(current, role, name, office_id)
        for member in written.replaced:
            self._tell(lambda listener: listener.member_purged(member))
        outcome = written.outcome
        if outcome.changed:
            with self._lock:
                if outcome.left is not None:
                    self._forget_name(outcome.left)
                if sid in self._local:  # not dropped meanwhile
                    self._local[sid] = outcome.joined
                    self._local_names[(office_id, role, name)] = sid
                    if written.incarnation != self.incarnation:  # a new one began meanwhile
                        self._unwritten.add(sid)
        return outcome

    def leave(self, sid: str, office_id: str) -> Session:
        with self._lock:
            left = plan_leave(self._connected(sid), office_id)
        with self._available():
            with self._redis.pipeline(transaction=True) as pipe:
                self._queue_removal(pipe, left)
                pipe.publish(self._key("left"), sid)
                pipe.execute()
        with self._lock:
            self._forget_name(left)
            if sid in self._local:
                self._local[sid] = attrs.evolve(left, name=None, office_id=None)
        return left

    def recall(self, office_id: str, role: Role, name: str) -> tuple[bool, Session | None]:
        """A member of this node, or one of another node as `find` last saw it (until it
        is heard ending, leaving or moving): no round trip. Anything else: ask `find`."""
        with self._lock:
            sid = self._local_names.get((office_id, role, name))
            if sid is not None:
                return True, self._local[sid]
            seen = self._seen.named(office_id, role, name)
            if seen is not None and seen.sid not in self._ended:
                return True, seen
        return False, None

    def find(self, office_id: str, role: Role, name: str) -> Session | None:
        known, member = self.recall(office_id, role, name)
        if known:
            return member
        with self._lock:
            seen_at = self._seen.forgotten
        started = time.perf_counter()
        with self._available():
            raw = self._find(args=[self._prefix, office_id, role, name])
        if self.observer is not None:
            self.observer.looked_up(time.perf_counter() - started)
        if not raw:
            return None
        found = _decode(raw)
        with self._lock:  # Redis has it live: also one heard ending when its node was purged, then came back
            self._ended.pop(found.sid, None)
            self._seen.remember(found, seen_at)
        return found

    def members(self, office_id: str) -> list[Session]:
        with self._available():
            return [_decode(raw) for raw in self._members(args=[self._prefix, office_id])]

    def readiness(self) -> dict[str, Any]:
        """Ready while the last heartbeat completed within `node_ttl` (one blocked on a
        Redis that hangs makes it stale) and left this incarnation alive in a known epoch
        with every member written back (not mid-rebuild)."""
        last = self._last_beat
        age = None if last is None else time.monotonic() - last
        with self._lock:
            settled = self._epoch is not None and not self._unwritten
        reachable = self._reachable and age is not None and age < self.node_ttl
        return {
            "ready": reachable and settled,
            "kind": "redis",
            "reachable": reachable,
            "settled": settled,
            "last_heartbeat_age": None if age is None else round(age, 3),
        }

    def local_sessions(self) -> list[Session]:
        with self._lock:
            return list(self._local.values())

    # -- background work ----------------------------------------------------------------------

    def attach(self, listener: RegistryListener) -> None:
        """Beat once (so this node can take joins at once when Redis is up), then start the
        heartbeat (which also purges dead nodes) and the `gone` subscriber."""
        self._listener = listener
        self._beat_logged()
        self._start_threads()

    def _become_forked_node(self) -> None:
        """`serve()`'s gunicorn worker is forked from the process that built the Server:
        threads do not survive a fork, and the worker must be a node of its own (else
        its members would live on while the parent heartbeats after the worker died)."""
        with self._fork_lock:
            if self._pid == os.getpid():
                return
            self._lock = threading.Lock()
            # A new pool, not redis-py's inherited one: a parent thread may have held that
            # pool's lock at the fork, and the child's first command then fails with
            # ChildDeadlockedError (a 500 on the worker's first join, seen in CI). The
            # inherited client is kept, never used nor closed: closing it (or its garbage
            # collection) would wait on that same lock.
            self._inherited_from_parent = self._redis
            self._connect()
            self._epoch = None  # the next beat starts this worker's own incarnation
            self._stopping = threading.Event()
            self._threads = []
            if self._listener is not None:
                self._beat_logged()
                self._start_threads()
            self._pid = os.getpid()

    def _connect(self) -> None:
        """A Redis client (its own connection pool) and the scripts bound to it."""
        self._redis = redis_client(self._url, decode_responses=True)
        self._drop = self._redis.register_script(_DROP)
        self._purge = self._redis.register_script(_PURGE)
        self._members = self._redis.register_script(_MEMBERS)
        self._find = self._redis.register_script(_FIND)
        self._claim_epoch = self._redis.register_script(_EPOCH)
        self._refresh = self._redis.register_script(_REFRESH)

    def _start_threads(self) -> None:
        for name, target in (("heartbeat", self._heartbeat), ("gone", self._follow_gone)):
            thread = threading.Thread(target=target, name=f"smcp-registry-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the threads and take this node out (its sessions were dropped already;
        any left are purged by the other nodes at once)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)
            if thread.is_alive():
                logger.warning("registry thread %s still running after %.1f s", thread.name, timeout)
        self._threads.clear()
        try:
            self._redis.delete(self._key("alive", self.incarnation))
        except RedisError as exc:
            logger.info("registry: could not remove node %s at close (%s)", self.incarnation, exc)
        self._redis.close()

    def beat(self) -> None:
        """One heartbeat: see the epoch; refresh this incarnation, or start a new one when
        Redis lost it; write back the members not yet written; retry failed drops; purge
        dead incarnations and announce their members' leave. Raises RedisError midway:
        what is left is done on the next beat."""
        run_id = self._redis.info("server")["run_id"]
        epoch = self._claim_epoch(args=[self._key("epoch"), f"{run_id}:", f"{run_id}:{uuid.uuid4().hex}"])
        alive = self._key("alive", self.incarnation)
        if epoch != self._epoch or not self._refresh(args=[alive, epoch, self._ttl_ms]):
            self._start_incarnation(epoch)
        self._write_back()
        with self._lock:
            retry = sorted(self._unsynced_drops)
        for sid in retry:
            self._drop(args=[self._prefix, sid])
            with self._lock:
                self._unsynced_drops.discard(sid)
        self._purge_dead()

    def _purge_dead(self) -> None:
        """Purge dead incarnations' members `PURGE_BATCH` at a time, announcing each
        batch's leaves before taking the next."""
        more = True
        while more and not self._stopping.is_set():
            *purged, more = self._purge(args=[self._prefix, PURGE_BATCH])
            for raw in purged:
                member = _decode(raw)
                logger.info("registry: purged %s %r of a dead node from office %r", member.role, member.name, member.office_id)
                if self.observer is not None:
                    self.observer.purged()
                self._tell(lambda listener: listener.member_purged(member))

    def _start_incarnation(self, epoch: str) -> None:
        """Assert a new incarnation alive in `epoch`; every member is to be written back."""
        previous, incarnation = self.incarnation, uuid.uuid4().hex
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key("alive", previous))
            pipe.set(self._key("alive", incarnation), epoch, px=self._ttl_ms)
            pipe.hset(self._key("nodes"), incarnation, epoch)
            pipe.execute()
        with self._lock:
            recovering = self._epoch is not None
            if epoch != self._epoch:  # Redis lost its data: where members were seen may be stale
                self._seen.clear()
            self._epoch, self.incarnation = epoch, incarnation
            self._unwritten = {sid for sid, session in self._local.items() if session.joined}
            count = len(self._unwritten)
        if recovering and self.observer is not None:
            self.observer.epoch_changed()
        if recovering:
            logger.warning(
                "registry: Redis at %s lost this node's records (restarted, flushed, restored, or the node was "
                "declared dead); writing %d members back as incarnation %s",
                self._where,
                count,
                incarnation,
            )

    def _write_back(self) -> None:
        """Write back the members not yet written in this incarnation, `WRITE_BACK_BATCH`
        at a time, each batch under its sessions' locks (those live joins and leaves take)
        and the office rules, in one transaction; the incarnation's heartbeat is refreshed
        before each batch, so no other node purges this one while it writes. A batch
        another node's write overtook is split and tried again. Those refused (their place
        was taken) are told to the listener after the locks (it disconnects them)."""
        with self._lock:
            pending = sorted(self._unwritten)
        batches = collections.deque(pending[i : i + WRITE_BACK_BATCH] for i in range(0, len(pending), WRITE_BACK_BATCH))
        while batches:
            batch = batches.popleft()
            self._keep_alive()
            try:
                refused = self._write_back_batch(batch)
            except WatchError:
                half = (len(batch) + 1) // 2
                batches.extendleft([batch[half:], batch[:half]] if half < len(batch) else [batch])
                continue
            for member in refused:
                if self.observer is not None:
                    self.observer.written_back(refused=True)
                self._tell(lambda listener: listener.member_refused(member))

    def _keep_alive(self) -> None:
        """Refresh this incarnation's heartbeat; 500 if it was declared dead meanwhile (the
        next beat starts a new one)."""
        with self._lock:
            alive, epoch = self._key("alive", self.incarnation), self._epoch
        if epoch is None or not self._refresh(args=[alive, epoch, self._ttl_ms]):
            raise RegistryUnavailableError("the office registry (Redis) is recovering; try again", details={"registry": "redis"})

    def _write_back_batch(self, sids: list[str]) -> list[Session]:
        """Write `sids` back (those still joined) under their locks; return the refused."""
        with self._sessions_locked(sids):
            with self._lock:
                members = [m for m in (self._local.get(sid) for sid in sids) if m is not None and m.joined]
                incarnation, expected = self.incarnation, self._epoch
            refused: list[Session] = []
            if members:
                written = self._write_members_back(members, incarnation, expected, refused)
                for replaced in written.replaced:
                    self._tell(lambda listener: listener.member_purged(replaced))
                for member in written.restored:
                    self._tell(lambda listener: listener.member_restored(member))
            with self._lock:
                self._unwritten.difference_update(sids)
        return refused

    def _write_members_back(
        self, members: list[Session], incarnation: str, expected: str | None, refused: list[Session]
    ) -> _WrittenBack:
        """`plan_join` of each member against its office as Redis has it (with the members
        of this batch planned before it), all written in one transaction watched over
        their offices and records; raises WatchError when another node changed one first.
        A member Redis still has live is left as it is."""
        offices = sorted({m.office_id for m in members if m.office_id is not None})
        epoch_key, alive_key = self._key("epoch"), self._key("alive", incarnation)
        office_keys = [self._key("o", office) for office in offices]
        own_keys = [self._key("s", m.sid) for m in members]
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.watch(epoch_key, alive_key, *office_keys, *own_keys)
            with self._redis.pipeline(transaction=False) as read:
                read.get(epoch_key)
                read.get(alive_key)
                read.mget(own_keys)
                for key in office_keys:
                    read.zrange(key, 0, -1)
                read.incrby(self._key("order"), len(members))  # members list in join order, whichever node
                epoch, alive, owns, *listed, last_order = read.execute()
            if epoch is None or epoch != expected or alive != epoch:
                raise RegistryUnavailableError(
                    "the office registry (Redis) is recovering; try again", details={"registry": "redis"}
                )
            records = self._records(set().union(*listed))
            alive_nodes = self._alive_nodes(records.values())
            views = {
                office: _sorted_out(office, epoch, {sid: records[sid] for sid in sids}, alive_nodes)
                for office, sids in zip(offices, listed)
            }
            written: list[tuple[Session, JoinOutcome, str | None]] = []
            for member, own in zip(members, owns):
                assert member.role is not None and member.name is not None and member.office_id is not None
                present = views[member.office_id].present
                if any(m.sid == member.sid for m in present):
                    continue
                try:
                    outcome = plan_join(attrs.evolve(member, name=None, office_id=None), member.role, member.name, member.office_id, present)
                except SMCPError as refusal:
                    logger.warning("registry: %s %r cannot return to office %r: %s", member.role, member.name, member.office_id, refusal)
                    refused.append(member)
                    continue
                present.append(outcome.joined)
                written.append((member, outcome, own))
            pipe.multi()
            replaced: list[Session] = []
            rewritten = {member.sid for member, _, _ in written}
            for office in sorted({member.office_id for member, _, _ in written if member.office_id is not None}):
                replaced += self._queue_clearing(pipe, office, epoch, views[office], keep=rewritten)
            order = last_order - len(members)
            for member, outcome, own in written:
                order += 1
                self._queue_join(pipe, member.sid, outcome, own, incarnation, epoch, order)
            pipe.execute()
        if self.observer is not None:
            for _ in written:
                self.observer.written_back(refused=False)
        return _WrittenBack(restored=[member for member, _, _ in written], replaced=replaced)

    def _beat_logged(self) -> None:
        try:
            self.beat()
            self._last_beat = time.monotonic()
            if not self._reachable:
                logger.warning("registry: Redis at %s is reachable again", self._where)
            self._reachable = True
        except (RedisError, RegistryUnavailableError) as exc:
            if self._reachable:
                logger.warning("registry: Redis at %s is unreachable (%s); retrying", self._where, exc)
            self._reachable = False
        except Exception:
            logger.exception("registry heartbeat failed")

    def _heartbeat(self) -> None:
        interval = self.node_ttl / 4
        while not self._stopping.wait(interval):
            self._beat_logged()

    def _follow_gone(self) -> None:
        """Tell the listener about every session that ends anywhere (the `gone` channel);
        forget where members were seen when they end, leave or move (`left`), and all of
        them when the subscription (re)starts: what was published before was missed."""
        gone, left = self._key("gone"), self._key("left")
        while not self._stopping.is_set():
            pubsub = self._redis.pubsub()
            try:
                pubsub.subscribe(gone, left)
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        with self._lock:
                            self._seen.clear()
                    elif message["type"] == "message" and message["channel"] == left:
                        with self._lock:
                            self._seen.forget(message["data"])
                    elif message["type"] == "message":
                        sid = message["data"]
                        with self._lock:
                            self._seen.forget(sid)
                            _remember(self._ended, sid, None)
                        self._tell(lambda listener: listener.session_gone(sid))
            except RedisError:
                self._stopping.wait(0.5)  # the heartbeat logs the outage
            finally:
                pubsub.close()

    # -- helpers ------------------------------------------------------------------------------

    def _write_join(self, current: Session, role: Role, name: str, office_id: str) -> _Written:
        """`plan_join` against the live members of the office as Redis has it, written in
        one transaction under this node's incarnation; retried when another node changes
        a watched key first. Records of dead incarnations do not count: they are taken
        out (a client back after its node died takes its old place). 500 while this node
        is not alive in the current epoch (its heartbeat writes its members back first)."""
        office_key, epoch_key = self._key("o", office_id), self._key("epoch")
        with self._lock:
            incarnation, expected = self.incarnation, self._epoch
        watched = [office_key, epoch_key, self._key("s", current.sid)]

        def attempt(pipe: Any) -> _Written:
            epoch = pipe.get(epoch_key)
            if epoch is None or epoch != expected or pipe.get(self._key("alive", incarnation)) != epoch:
                raise RegistryUnavailableError(
                    "the office registry (Redis) is recovering; try again", details={"registry": "redis"}
                )
            own = pipe.get(self._key("s", current.sid))
            records = self._records(pipe.zrange(office_key, 0, -1), pipe)
            view = _sorted_out(office_id, epoch, records, self._alive_nodes(records.values(), pipe))
            outcome = plan_join(current, role, name, office_id, view.present)
            if not outcome.changed:
                return _Written(outcome, incarnation, [])
            order = pipe.incr(self._key("order"))  # members list in join order, whichever node
            pipe.multi()
            replaced = self._queue_clearing(pipe, office_id, epoch, view, keep={current.sid})
            self._queue_join(pipe, current.sid, outcome, own, incarnation, epoch, order)
            return _Written(outcome, incarnation, replaced)

        # redis-py types the callable as returning None, though value_from_callable returns its value
        return self._redis.transaction(attempt, *watched, value_from_callable=True)  # type: ignore[arg-type,return-value]

    def _records(self, sids: Iterable[str], client: Any = None) -> dict[str, str | None]:
        """The records of `sids` (None where Redis has none), in one round trip."""
        listed = sorted(sids)
        values = (self._redis if client is None else client).mget([self._key("s", sid) for sid in listed]) if listed else []
        return dict(zip(listed, values))

    def _alive_nodes(self, records: Iterable[str | None], client: Any = None) -> dict[str, str | None]:
        """The epoch each incarnation named in `records` is alive in (None: dead)."""
        nodes = sorted({json.loads(raw)["node"] for raw in records if raw})
        values = (self._redis if client is None else client).mget([self._key("alive", node) for node in nodes]) if nodes else []
        return dict(zip(nodes, values))

    def _queue_clearing(self, pipe: Any, office_id: str, epoch: str, view: _OfficeView, keep: set[str]) -> list[Session]:
        """Queue taking an office's records of dead incarnations (and sids listed without a
        record there) out; return the members among them that were live in this epoch
        but the sids in `keep` (they are written anew): they leave, calls on them fail.
        Older epochs' records are ghosts, gone silently."""
        for sid, record in view.dead:
            pipe.delete(self._key("s", sid))
            pipe.srem(self._key("n", record["node"]), sid)
        if view.dead or view.absent:
            pipe.zrem(self._key("o", office_id), *(sid for sid, _ in view.dead), *view.absent)
        replaced = [_session_of(record) for sid, record in view.dead if record["epoch"] == epoch and sid not in keep]
        for member in replaced:
            pipe.publish(self._key("gone"), member.sid)
        return replaced

    def _queue_join(
        self, pipe: Any, sid: str, outcome: JoinOutcome, own: str | None, incarnation: str, epoch: str, order: int
    ) -> None:
        """Queue writing `outcome` under `incarnation`: the record, the node's and the
        office's index; `own` is the record Redis had of `sid` before."""
        office_id = outcome.joined.office_id
        assert office_id is not None
        if outcome.left is not None or own is not None:  # moving: it was seen elsewhere
            pipe.publish(self._key("left"), sid)
        if outcome.left is not None:
            self._queue_removal(pipe, outcome.left)
        if own is not None and json.loads(own)["office_id"] not in (office_id, outcome.left and outcome.left.office_id):
            pipe.zrem(self._key("o", json.loads(own)["office_id"]), sid)  # a record Redis kept from before
        pipe.set(self._key("s", sid), _encode(outcome.joined, incarnation, epoch))
        pipe.sadd(self._key("n", incarnation), sid)
        pipe.hset(self._key("nodes"), incarnation, epoch)  # for the purge; only the heartbeat says alive
        pipe.zadd(self._key("o", office_id), {sid: order})

    def _queue_removal(self, pipe: Any, member: Session) -> None:
        assert member.office_id is not None  # a member: it is in an office
        pipe.delete(self._key("s", member.sid))
        pipe.srem(self._key("n", self.incarnation), member.sid)
        pipe.zrem(self._key("o", member.office_id), member.sid)

    @contextlib.contextmanager
    def _sessions_locked(self, sids: Iterable[str]) -> Iterator[None]:
        """Hold the locks live traffic holds while changing these sessions' membership
        (the listener's): each distinct lock once, in one order (no two write-backs run
        at once, and live traffic holds one such lock at a time)."""
        if self._listener is None:
            yield
            return
        locks = {id(lock): lock for lock in map(self._listener.locked, sids)}
        with contextlib.ExitStack() as held:
            for key in sorted(locks):
                held.enter_context(locks[key])
            yield

    def _connected(self, sid: str) -> Session:
        current = self._local.get(sid)
        if current is None:
            raise NotFoundError("this session is not connected", details={"sid": sid})
        return current

    def _forget_name(self, member: Session) -> None:
        assert member.role is not None and member.name is not None and member.office_id is not None
        self._local_names.pop((member.office_id, member.role, member.name), None)

    def _tell(self, report: Callable[[RegistryListener], None]) -> None:
        if self._listener is not None:
            try:
                report(self._listener)
            except Exception:
                logger.exception("registry listener failed")

    def _key(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    @property
    def _ttl_ms(self) -> int:
        return int(self.node_ttl * 1000)

    def _available(self) -> _RedisErrors:
        return _RedisErrors(self._where)


class _RedisErrors:
    """Turns a Redis failure into a clear 500 for the caller. Redis's address goes to the
    log, not to the client: it is the deployment's internal topology."""

    def __init__(self, where: str) -> None:
        self._where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if isinstance(exc, RedisError):
            logger.warning("registry: Redis at %s failed a request: %s", self._where, exc)
            raise RegistryUnavailableError(
                "the office registry (Redis) is unavailable; try again", details={"registry": "redis"}
            ) from exc


def _sorted_out(office_id: str, epoch: str, records: dict[str, str | None], alive: dict[str, str | None]) -> _OfficeView:
    """An office's entries as live members, records of dead incarnations (or of older
    epochs), and sids listed without a record there; `alive` maps incarnations to the
    epoch they are alive in."""
    decoded = {sid: json.loads(raw) for sid, raw in records.items() if raw}
    view = _OfficeView()
    for sid, record in decoded.items():
        if record["office_id"] != office_id:
            continue
        if record["epoch"] == epoch and alive.get(record["node"]) == epoch:
            view.present.append(_session_of(record))
        else:
            view.dead.append((sid, record))
    view.absent.extend(sid for sid in records if sid not in decoded or decoded[sid]["office_id"] != office_id)
    return view


def _remember(memory: collections.OrderedDict[str, Any], sid: str, value: Any) -> None:
    """Keep `sid` in `memory`, the oldest forgotten past `REMEMBERED`."""
    memory[sid] = value
    memory.move_to_end(sid)
    while len(memory) > REMEMBERED:
        memory.popitem(last=False)


def _encode(session: Session, incarnation: str, epoch: str) -> str:
    record: dict[str, Any] = {
        "sid": session.sid,
        "node": incarnation,
        "epoch": epoch,
        "role": session.role,
        "name": session.name,
        "office_id": session.office_id,
        "extensions": sorted(session.handshake.extensions),
    }
    if session.handshake.a2c_version is not None:
        record["a2c_version"] = session.handshake.a2c_version
    return json.dumps(record)


def _decode(raw: str | bytes) -> Session:
    return _session_of(json.loads(raw))


def _session_of(record: dict[str, Any]) -> Session:
    handshake = Handshake(a2c_version=record.get("a2c_version"), extensions=frozenset(record.get("extensions") or ()))
    return Session(sid=record["sid"], role=record["role"], name=record["name"], office_id=record["office_id"], handshake=handshake)
