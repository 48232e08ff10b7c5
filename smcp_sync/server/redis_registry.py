"""`RedisRegistry`: the office registry in Redis, shared by several Server processes.

Each process (node) keeps its own sessions in memory, the authority for them (only their
node changes them), and writes the joined ones to Redis for the others. A join reads the
target office under `WATCH`, decides with `office_rules.plan_join` and writes in one
`MULTI` (retried when another node changed the office meanwhile). Removals are Lua
scripts, so a dead node's members are purged, and announced, by exactly one survivor.

Keys (prefix ``smcp:``): ``s:{sid}`` a joined session (JSON), ``o:{office}`` its members
(sorted set, scored by the ``order`` counter at join), ``n:{node}`` a node's joined sids,
``alive:{node}`` the node's heartbeat (expires after `node_ttl`), ``nodes`` every node seen. Channel
``gone`` carries the sid of every session that ends, so the nodes fail requests forwarded
to it at once. Redis Cluster is not supported (scripts touch keys they compute).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from typing import Any, Callable

import attrs
import redis
from redis.exceptions import RedisError

from ..protocol.errors import InternalError, NotFoundError, SMCPError
from ..protocol.models import Role
from .office_rules import Handshake, JoinOutcome, Session, plan_join, plan_leave
from .registry import OfficeRegistry, RegistryListener

logger = logging.getLogger(__name__)

#: A node whose heartbeat is older than this is dead: its members are purged.
DEFAULT_NODE_TTL = 5.0
#: Longest a Redis command may block (connect or answer).
REDIS_TIMEOUT = 2.0
PREFIX = "smcp:"

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

#: Drop a session that ended (ARGV: prefix, sid); tell every node.
_DROP = _REMOVE + """
local raw = remove(ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[1] .. 'gone', ARGV[2])
return raw
"""

#: Remove every member of every node whose heartbeat expired; return them. Atomic: two
#: survivors running it at once cannot both get (and announce) the same member.
_PURGE = _REMOVE + """
local p = ARGV[1]
local purged = {}
for _, node in ipairs(redis.call('SMEMBERS', p .. 'nodes')) do
  if redis.call('EXISTS', p .. 'alive:' .. node) == 0 then
    for _, sid in ipairs(redis.call('SMEMBERS', p .. 'n:' .. node)) do
      local raw = remove(p, sid)
      if raw then
        table.insert(purged, raw)
        redis.call('PUBLISH', p .. 'gone', sid)
      end
    end
    redis.call('DEL', p .. 'n:' .. node)
    redis.call('SREM', p .. 'nodes', node)
  end
end
return purged
"""

#: The members of an office in join order (ARGV: prefix, office).
_MEMBERS = """
local out = {}
for _, sid in ipairs(redis.call('ZRANGE', ARGV[1] .. 'o:' .. ARGV[2], 0, -1)) do
  local raw = redis.call('GET', ARGV[1] .. 's:' .. sid)
  if raw then table.insert(out, raw) end
end
return out
"""

#: The member of an office with a role and name (ARGV: prefix, office, role, name).
_FIND = """
for _, sid in ipairs(redis.call('ZRANGE', ARGV[1] .. 'o:' .. ARGV[2], 0, -1)) do
  local raw = redis.call('GET', ARGV[1] .. 's:' .. sid)
  if raw then
    local s = cjson.decode(raw)
    if s.role == ARGV[3] and s.name == ARGV[4] then return raw end
  end
end
return false
"""


class RegistryUnavailableError(InternalError):
    """Redis cannot be reached: the change was not made."""


class RedisRegistry(OfficeRegistry):
    """Offices shared through Redis by every Server process given the same `url`."""

    def __init__(self, url: str, *, node_ttl: float = DEFAULT_NODE_TTL, prefix: str = PREFIX) -> None:
        if node_ttl < 1:
            raise ValueError("node_ttl must be >= 1 second")
        self.node_id = uuid.uuid4().hex
        self.node_ttl = node_ttl
        self._prefix = prefix
        self._url = url
        self._where = url.rsplit("@", 1)[-1]  # never the password
        self._connect()
        self._lock = threading.Lock()
        self._local: dict[str, Session] = {}
        self._local_names: dict[tuple[str, Role, str], str] = {}
        self._unsynced_drops: set[str] = set()
        self._listener: RegistryListener | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._reachable = True
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()  # taken only in a forked child: never held at a fork

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
        with self._lock:
            local = self._local.get(sid)
        if local is not None:
            return local
        with self._available():
            raw = self._redis.get(self._key("s", sid))
        return _decode(raw) if raw else None

    def join(self, sid: str, role: Role, name: str, office_id: str) -> JoinOutcome:
        with self._lock:
            current = self._connected(sid)
        with self._available():
            outcome = self._write_join(current, role, name, office_id)
        if outcome.changed:
            with self._lock:
                if outcome.left is not None:
                    self._forget_name(outcome.left)
                if sid in self._local:  # not dropped meanwhile
                    self._local[sid] = outcome.joined
                    self._local_names[(office_id, role, name)] = sid
        return outcome

    def leave(self, sid: str, office_id: str) -> Session:
        with self._lock:
            left = plan_leave(self._connected(sid), office_id)
        with self._available():
            with self._redis.pipeline(transaction=True) as pipe:
                self._queue_removal(pipe, left)
                pipe.execute()
        with self._lock:
            self._forget_name(left)
            if sid in self._local:
                self._local[sid] = attrs.evolve(left, name=None, office_id=None)
        return left

    def find(self, office_id: str, role: Role, name: str) -> Session | None:
        with self._lock:  # a member of this node needs no round trip
            sid = self._local_names.get((office_id, role, name))
            if sid is not None:
                return self._local[sid]
        with self._available():
            raw = self._find(args=[self._prefix, office_id, role, name])
        return _decode(raw) if raw else None

    def members(self, office_id: str) -> list[Session]:
        with self._available():
            return [_decode(raw) for raw in self._members(args=[self._prefix, office_id])]

    # -- background work ----------------------------------------------------------------------

    def attach(self, listener: RegistryListener) -> None:
        """Start the heartbeat (which also purges dead nodes) and the `gone` subscriber."""
        self._listener = listener
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
            self.node_id = uuid.uuid4().hex
            self._stopping = threading.Event()
            self._threads = []
            if self._listener is not None:
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
            self._redis.delete(self._key("alive", self.node_id))
        except RedisError as exc:
            logger.info("registry: could not remove node %s at close (%s)", self.node_id, exc)
        self._redis.close()

    def beat(self) -> None:
        """One heartbeat: refresh this node (writing its members back if Redis lost them),
        retry failed drops, purge the dead nodes and announce their members' leave."""
        alive = self._redis.set(self._key("alive", self.node_id), "1", px=self._ttl_ms, xx=True)
        if not alive:
            self._reassert()
        with self._lock:
            retry, self._unsynced_drops = self._unsynced_drops, set()
        for sid in retry:
            self._drop(args=[self._prefix, sid])
        for raw in self._purge(args=[self._prefix]):
            member = _decode(raw)
            logger.info("registry: purged %s %r of a dead node from office %r", member.role, member.name, member.office_id)
            self._tell(lambda listener: listener.member_purged(member))

    def _heartbeat(self) -> None:
        interval = self.node_ttl / 4
        while True:
            try:
                self.beat()
                if not self._reachable:
                    logger.warning("registry: Redis at %s is reachable again", self._where)
                self._reachable = True
            except RedisError as exc:
                if self._reachable:
                    logger.warning("registry: Redis at %s is unreachable (%s); retrying", self._where, exc)
                self._reachable = False
            except Exception:
                logger.exception("registry heartbeat failed")
            if self._stopping.wait(interval):
                return

    def _follow_gone(self) -> None:
        """Tell the listener about every session that ends anywhere (the `gone` channel)."""
        while not self._stopping.is_set():
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self._key("gone"))
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None and message["type"] == "message":
                        sid = message["data"]
                        self._tell(lambda listener: listener.session_gone(sid))
            except RedisError:
                self._stopping.wait(0.5)  # the heartbeat logs the outage
            finally:
                pubsub.close()

    def _reassert(self) -> None:
        """Redis lost this node (restarted, or this node missed its heartbeats and was
        purged): mark it alive and write its members back under the office rules."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self._key("alive", self.node_id), "1", px=self._ttl_ms)
        pipe.sadd(self._key("nodes"), self.node_id)
        pipe.execute()
        with self._lock:
            members = [s for s in self._local.values() if s.joined]
        for member in members:
            assert member.role is not None and member.name is not None and member.office_id is not None
            outside = attrs.evolve(member, name=None, office_id=None)
            try:
                outcome = self._write_join(outside, member.role, member.name, member.office_id, restoring=True)
            except SMCPError as refusal:
                logger.warning("registry: %s %r cannot return to office %r: %s", member.role, member.name, member.office_id, refusal)
                self._tell(lambda listener: listener.member_refused(member))
                continue
            if outcome.changed:
                self._tell(lambda listener: listener.member_restored(member))

    # -- helpers ------------------------------------------------------------------------------

    def _write_join(self, current: Session, role: Role, name: str, office_id: str, restoring: bool = False) -> JoinOutcome:
        """`plan_join` against the office as Redis has it, written in one transaction;
        retried when another node changes a watched office first. When `restoring` a
        member Redis still has, nothing changes."""
        office_key = self._key("o", office_id)
        watched = [office_key, self._key("s", current.sid)]
        if current.office_id is not None:
            watched.append(self._key("o", current.office_id))

        def attempt(pipe: Any) -> JoinOutcome:
            sids = pipe.zrange(office_key, 0, -1)
            records = pipe.mget([self._key("s", s) for s in sids]) if sids else []
            present = [_decode(raw) for raw in records if raw]
            outcome = plan_join(current, role, name, office_id, present)
            if restoring and any(m.sid == current.sid for m in present):
                return attrs.evolve(outcome, changed=False)
            if not outcome.changed:
                return outcome
            order = pipe.incr(self._key("order"))  # members list in join order, whichever node
            pipe.multi()
            if outcome.left is not None:
                self._queue_removal(pipe, outcome.left)
            pipe.set(self._key("s", current.sid), _encode(outcome.joined, self.node_id))
            pipe.sadd(self._key("n", self.node_id), current.sid)
            pipe.zadd(office_key, {current.sid: order})
            pipe.set(self._key("alive", self.node_id), "1", px=self._ttl_ms)
            pipe.sadd(self._key("nodes"), self.node_id)
            return outcome

        # redis-py types the callable as returning None, though value_from_callable returns its value
        return self._redis.transaction(attempt, *watched, value_from_callable=True)  # type: ignore[arg-type,return-value]

    def _queue_removal(self, pipe: Any, member: Session) -> None:
        assert member.office_id is not None  # a member: it is in an office
        pipe.delete(self._key("s", member.sid))
        pipe.srem(self._key("n", self.node_id), member.sid)
        pipe.zrem(self._key("o", member.office_id), member.sid)

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


def _encode(session: Session, node: str) -> str:
    record: dict[str, Any] = {
        "sid": session.sid,
        "node": node,
        "role": session.role,
        "name": session.name,
        "office_id": session.office_id,
        "extensions": sorted(session.handshake.extensions),
    }
    if session.handshake.a2c_version is not None:
        record["a2c_version"] = session.handshake.a2c_version
    return json.dumps(record)


def _decode(raw: str | bytes) -> Session:
    record = json.loads(raw)
    handshake = Handshake(a2c_version=record.get("a2c_version"), extensions=frozenset(record.get("extensions") or ()))
    return Session(sid=record["sid"], role=record["role"], name=record["name"], office_id=record["office_id"], handshake=handshake)
