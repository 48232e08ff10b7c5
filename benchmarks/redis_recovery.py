"""Part of the opt-in ``scale_out`` section: what it costs a scale-out to recover when
Redis loses its data, and to follow a Sentinel failover.

* recovery: two Server nodes in this process on a Redis of the benchmark's own; node A
  holds N members (Computers joined through its registry, 10 per office; an Agent of
  node B in every tenth office, as real clients), then FLUSHALL: the seconds until every
  member is back in Redis under A's new incarnation (node B sees them from then on; the
  enter notifications are published as they go), for N in 1,000 / 3,000 / 10,000; then
  node A's registry stops without a word and the seconds until node B has purged its N;
* sentinel failover: a master, a replica and three Sentinels (tests/scale_out/parts.py,
  a master down after 1 s), two Server node processes given the ``redis+sentinel://``
  URL, an Agent on one and a Computer on the other; the master SIGKILLed, the seconds
  until a call across the nodes is answered and the office listed whole (polled every
  20 ms), over `SENTINEL_RUNS` runs.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.scale_out.parts import RedisServer, SentinelGroup, populate, redis_binary
from smcp_sync.server import RedisOptions, ServerLimits

#: Members per node measured, and with --quick.
MEMBERS, QUICK_MEMBERS = (1_000, 3_000, 10_000), (300,)
PER_OFFICE = 10
#: Sentinel failovers measured, and with --quick.
SENTINEL_RUNS, QUICK_SENTINEL_RUNS = 5, 1
#: The epoch's key in the nodes' default deployment (redis_registry.py).
EPOCH = "smcp:0:epoch"
#: Longest one measure may take before it gives up.
LIMIT = 120.0


def recovery(quick: bool) -> list[dict[str, Any]]:
    """Seconds to write N members back after FLUSHALL, and to purge them."""
    return [_recovery(members) for members in (QUICK_MEMBERS if quick else MEMBERS)]


def _recovery(members: int) -> dict[str, Any]:
    from smcp_sync import SMCPServer
    from smcp_sync.connection.session import Connection

    binary = redis_binary()
    assert binary is not None  # scale_out.available() was asked
    with RedisServer(binary) as shared, contextlib.ExitStack() as stack:
        a = stack.enter_context(SMCPServer(redis=RedisOptions(shared.url), limits=ServerLimits(max_connections_per_ip=None)))
        b = stack.enter_context(SMCPServer(redis=RedisOptions(shared.url), limits=ServerLimits(max_connections_per_ip=None)))
        a.start(), b.start()
        offices = populate(a.registry, members, PER_OFFICE)
        agents = sorted(offices)[::10]
        for office in agents:
            agent = Connection("agent", "agent")
            stack.callback(agent.close)
            agent.connect(b.url, timeout=10)
            agent.join_office(office, 10)
        before = a.registry.incarnation
        started = time.perf_counter()
        shared.command("FLUSHALL")
        _wait(lambda: a.registry.incarnation != before, "a new incarnation")
        written = a.registry.prefix + f"n:{a.registry.incarnation}"
        _wait(lambda: shared.command("SCARD", written) == members, "every member written back")
        write_back = time.perf_counter() - started
        # node B writes its own Agents back when its heartbeat sees the flush, which may
        # come after node A's write-back: its view is whole once both are done
        _wait(lambda: sum(len(b.registry.members(office)) for office in offices) == members + len(agents),
              "node B seeing every member")  # fmt: skip
        dead = a.registry.incarnation
        a.registry.close()  # node A's heartbeat ends: its members are left to node B's purge
        started = time.perf_counter()
        _wait(lambda: not shared.command("HEXISTS", a.registry.prefix + "nodes", dead), "node A purged")
        purge = time.perf_counter() - started
    return {"members": members, "write_back_s": write_back, "purge_s": purge, "per_1000_s": write_back / members * 1000}


def sentinel_failover(quick: bool) -> list[float]:
    """Seconds from the master's SIGKILL until the office is whole and routed again."""
    return [_failover() for _ in range(QUICK_SENTINEL_RUNS if quick else SENTINEL_RUNS)]


def _failover() -> float:
    import redis

    from smcp_sync.agent import Agent
    from smcp_sync.connection.session import ReconnectPolicy
    from smcp_sync.protocol.errors import SMCPError
    from tests.scale_out.parts import nodes

    from .scale_out import office_of_two

    def whole(agent: Agent) -> bool:
        try:
            listed = {(s.role, s.name) for s in agent.list_room(timeout=1.0)}
            return listed == {("agent", "agent"), ("computer", "pc")} and agent.call_tool("pc", "who", {}, timeout=1.0).text == "pc"
        except SMCPError:
            return False

    binary = redis_binary()
    assert binary is not None
    with tempfile.TemporaryDirectory() as directory, SentinelGroup(binary, Path(directory)) as group:
        with nodes(group.url, 2) as (a, b), contextlib.ExitStack() as stack:
            agent = office_of_two(stack, Agent("agent", reconnect=ReconnectPolicy(enabled=False)), a.url, b.url, "failover")
            _wait(lambda: whole(agent), "the office whole before the kill")
            epoch = group.master.command("GET", EPOCH)
            started = time.perf_counter()
            group.master.kill()
            def promoted_and_whole() -> bool:
                """The promoted replica has the old epoch until a node sees another Redis holds it."""
                try:
                    moved = group.replica.command("GET", EPOCH) != epoch
                except redis.ConnectionError:  # Sentinel, promoting it, drops its clients (CLIENT KILL)
                    return False
                return moved and whole(agent)

            _wait(promoted_and_whole, "the office whole after the failover")
            return time.perf_counter() - started


def _wait(condition: Any, what: str) -> None:
    deadline = time.perf_counter() + LIMIT
    while not condition():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{what}: not within {LIMIT:g} s")
        time.sleep(0.02)
