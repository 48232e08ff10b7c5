"""`RedisRegistry`: the office registry in Redis, shared by several Server processes.

Each process (node) keeps its own sessions in memory, the authority for them (only their
node changes them), and writes the joined ones to Redis for the others. A join reads the
target office under `WATCH`, decides with `office_rules.plan_join` and writes in one
`MULTI` (retried when another node changed the office meanwhile). Removals are Lua
scripts, so a dead node's members are purged, and announced, by exactly one survivor.

Recovery (docs/server/scale-out.md). Redis's data has an *epoch*: a token naming the Redis
process (its `run_id`) that holds it. A restart (empty or from a snapshot) or a flush
loses it, and the first node to see that writes a new one. A node writes under an
*incarnation* of its own in one epoch; every record names both. Only the heartbeat
asserts an incarnation alive (``alive:{incarnation}`` holds the epoch, expiring after
`node_ttl`); a record counts only while its incarnation is alive in the current epoch,
so records of dead incarnations (a killed node, a snapshot's ghosts) are never seen
again, whatever Redis still holds. When the epoch changes, or its incarnation was
declared dead, a node starts a new incarnation and writes its members back from its
memory, each under the session's own lock (the lock live joins and leaves take) and
under the office rules; what fails is retried on the next beat.

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
import uuid
from typing import Any, Callable, ContextManager

import attrs
import redis
from redis.exceptions import RedisError

from ...protocol.errors import InternalError, NotFoundError, SMCPError
from ...protocol.models import Role
from ..offices.office_rules import Handshake, JoinOutcome, Session, plan_join, plan_leave
from ..offices.registry import OfficeRegistry, RegistryListener
from .redis_deployment import deployment_prefix, redacted
from .seen_members import SeenMembers

logger = logging.getLogger(__name__)

#: A node whose heartbeat is older than this is dead: its members are purged.
DEFAULT_NODE_TTL = 5.0
#: Longest a Redis command may block (connect or answer).
REDIS_TIMEOUT = 2.0
#: Members of other nodes remembered from `find` (and sessions heard ending), at most.
REMEMBERED = 10_000

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

#: Remove the members of every incarnation not alive in the current epoch; return those
#: of the current epoch (they were live: their leave is announced). Records of an older
#: epoch (a snapshot's ghosts, members written back since) go silently. Atomic: two
#: survivors running it at once cannot both get (and announce) the same member.
_PURGE = _REMOVE + """
local p = ARGV[1]
local epoch = redis.call('GET', p .. 'epoch')
local purged = {}
local nodes = redis.call('HGETALL', p .. 'nodes')
for i = 1, #nodes, 2 do
  local node, node_epoch = nodes[i], nodes[i + 1]
  if node_epoch ~= epoch or redis.call('GET', p .. 'alive:' .. node) ~= epoch then
    for _, sid in ipairs(redis.call('SMEMBERS', p .. 'n:' .. node)) do
      local raw = redis.call('GET', p .. 's:' .. sid)
      if raw and cjson.decode(raw).node == node then
        remove(p, sid)
        if node_epoch == epoch then
          table.insert(purged, raw)
          redis.call('PUBLISH', p .. 'gone', sid)
        end
      end
    end
    redis.call('DEL', p .. 'n:' .. node)
    redis.call('HDEL', p .. 'nodes', node)
  end
end
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


class RedisRegistry(OfficeRegistry):
    """Offices shared through Redis by every Server process given the same `url` and
    `prefix` (default: from the URL's database, `redis_deployment`)."""

    def __init__(self, url: str, *, node_ttl: float = DEFAULT_NODE_TTL, prefix: str | None = None) -> None:
        if node_ttl < 1:
            raise ValueError("node_ttl must be >= 1 second")
        self.node_ttl = node_ttl
        self._prefix = deployment_prefix(url, prefix)
        self._url = url
        self._where = redacted(url)
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
        with self._available():
            raw = self._find(args=[self._prefix, office_id, role, name])
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
        self._redis = redis.Redis.from_url(
            self._url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT, decode_responses=True
        )
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
        for raw in self._purge(args=[self._prefix]):
            member = _decode(raw)
            logger.info("registry: purged %s %r of a dead node from office %r", member.role, member.name, member.office_id)
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
        if recovering:
            logger.warning(
                "registry: Redis at %s lost this node's records (restarted, flushed, restored, or the node was "
                "declared dead); writing %d members back as incarnation %s",
                self._where,
                count,
                incarnation,
            )

    def _write_back(self) -> None:
        """Write back the members not yet written in this incarnation, each under its
        session's lock and the office rules; those refused (their place was taken) are
        told to the listener after the lock (it disconnects them)."""
        with self._lock:
            pending = sorted(self._unwritten)
        refused: list[Session] = []
        try:
            for sid in pending:
                with self._session_lock(sid):
                    self._write_back_one(sid, refused)
        finally:
            for member in refused:
                self._tell(lambda listener: listener.member_refused(member))

    def _write_back_one(self, sid: str, refused: list[Session]) -> None:
        with self._lock:
            member = self._local.get(sid)
        if member is not None and member.joined:
            assert member.role is not None and member.name is not None and member.office_id is not None
            outside = attrs.evolve(member, name=None, office_id=None)
            try:
                written = self._write_join(outside, member.role, member.name, member.office_id, restoring=True)
            except RegistryUnavailableError:
                raise
            except SMCPError as refusal:
                logger.warning("registry: %s %r cannot return to office %r: %s", member.role, member.name, member.office_id, refusal)
                refused.append(member)
            else:
                for replaced in written.replaced:
                    self._tell(lambda listener: listener.member_purged(replaced))
                if written.outcome.changed:
                    self._tell(lambda listener: listener.member_restored(member))
        with self._lock:
            self._unwritten.discard(sid)

    def _beat_logged(self) -> None:
        try:
            self.beat()
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

    def _write_join(self, current: Session, role: Role, name: str, office_id: str, restoring: bool = False) -> _Written:
        """`plan_join` against the live members of the office as Redis has it, written in
        one transaction under this node's incarnation; retried when another node changes
        a watched key first. Records of dead incarnations do not count: they are taken
        out (a client back after its node died takes its old place). When `restoring` a
        member Redis still has, nothing changes. 500 while this node is not alive in the
        current epoch (its heartbeat writes its members back first)."""
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
            sids = pipe.zrange(office_key, 0, -1)
            records = dict(zip(sids, pipe.mget([self._key("s", s) for s in sids]))) if sids else {}
            present, dead, absent = self._sorted_out(pipe, office_id, epoch, records)
            outcome = plan_join(current, role, name, office_id, present)
            if restoring and any(m.sid == current.sid for m in present):
                return _Written(attrs.evolve(outcome, changed=False), incarnation, [])
            if not outcome.changed:
                return _Written(outcome, incarnation, [])
            order = pipe.incr(self._key("order"))  # members list in join order, whichever node
            pipe.multi()
            if outcome.left is not None or own is not None:  # moving: it was seen elsewhere
                pipe.publish(self._key("left"), current.sid)
            if outcome.left is not None:
                self._queue_removal(pipe, outcome.left)
            if own is not None and json.loads(own)["office_id"] not in (office_id, current.office_id):
                pipe.zrem(self._key("o", json.loads(own)["office_id"]), current.sid)  # a record Redis kept from before
            for sid, record in dead:
                pipe.delete(self._key("s", sid))
                pipe.srem(self._key("n", record["node"]), sid)
            if dead or absent:
                pipe.zrem(office_key, *(sid for sid, _ in dead), *absent)
            pipe.set(self._key("s", current.sid), _encode(outcome.joined, incarnation, epoch))
            pipe.sadd(self._key("n", incarnation), current.sid)
            pipe.hset(self._key("nodes"), incarnation, epoch)  # for the purge; only the heartbeat says alive
            pipe.zadd(office_key, {current.sid: order})
            # the members of dead incarnations of this epoch were live: they leave (and
            # calls waiting on them fail); older epochs' records are ghosts, gone silently
            replaced = [_session_of(record) for sid, record in dead if record["epoch"] == epoch and sid != current.sid]
            for member in replaced:
                pipe.publish(self._key("gone"), member.sid)
            return _Written(outcome, incarnation, replaced)

        # redis-py types the callable as returning None, though value_from_callable returns its value
        return self._redis.transaction(attempt, *watched, value_from_callable=True)  # type: ignore[arg-type,return-value]

    def _sorted_out(
        self, pipe: Any, office_id: str, epoch: str, records: dict[str, str | None]
    ) -> tuple[list[Session], list[tuple[str, dict[str, Any]]], list[str]]:
        """An office's entries as live members, records of dead incarnations (or of older
        epochs), and sids listed without a record there."""
        decoded = {sid: json.loads(raw) for sid, raw in records.items() if raw}
        nodes = sorted({record["node"] for record in decoded.values()})
        alive = dict(zip(nodes, pipe.mget([self._key("alive", node) for node in nodes]))) if nodes else {}
        present: list[Session] = []
        dead: list[tuple[str, dict[str, Any]]] = []
        for sid, record in decoded.items():
            if record["office_id"] != office_id:
                continue
            if record["epoch"] == epoch and alive.get(record["node"]) == epoch:
                present.append(_session_of(record))
            else:
                dead.append((sid, record))
        absent = [sid for sid in records if sid not in decoded or decoded[sid]["office_id"] != office_id]
        return present, dead, absent

    def _queue_removal(self, pipe: Any, member: Session) -> None:
        assert member.office_id is not None  # a member: it is in an office
        pipe.delete(self._key("s", member.sid))
        pipe.srem(self._key("n", self.incarnation), member.sid)
        pipe.zrem(self._key("o", member.office_id), member.sid)

    def _session_lock(self, sid: str) -> ContextManager[Any]:
        """The lock live traffic holds while changing `sid`'s membership (the listener's)."""
        return self._listener.locked(sid) if self._listener is not None else contextlib.nullcontext()

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
