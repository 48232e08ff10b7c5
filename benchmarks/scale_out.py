"""Section ``scale_out`` (opt-in: it needs a `redis-server` binary): what the Redis hop
of a scale-out costs, and how fast the shared office registry is.

* ``redis_same_node``: Agent → node A → Computer also on node A → MCP echo; two Server
  processes share a Redis of the benchmark's own (every emit still goes out on
  python-socketio's Redis channel; the registry finds a local Computer without Redis);
* ``redis_cross_node``: Agent → node A → Redis → node B → Computer → MCP echo, and the
  answer back the same way;
* registry operations per second: `RedisRegistry` calls from one thread against that
  Redis (a Computer's join + leave, `find` of a member of another node the first time
  and once found, `members` of an office of two, `find` of a member of this node);
* failover: two nodes behind a TCP proxy (tests/scale_out/proxy.py), the Agent and a
  Computer on the first; it is SIGKILLed (a fresh node already up behind it) and the
  time counted until the Agent, reconnected and back in its office, has a tool call
  answered (polled every 20 ms).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from tests.scale_out.parts import RedisServer, redis_binary

from . import paths
from .echo import EchoServer
from .processes import Peers

#: Seconds each registry operation is repeated for.
REGISTRY_SECONDS, QUICK_REGISTRY_SECONDS = 2.0, 0.2
#: Node kills measured (README: p50 and p99 over at least 20).
FAILOVER_KILLS, QUICK_FAILOVER_KILLS = 20, 2
#: Longest one failover may take before the measure gives up.
FAILOVER_LIMIT = 60.0


def available() -> str | None:
    """Why the section cannot run here, or None."""
    return None if redis_binary() is not None else "no redis-server binary (Debian: apt-get install redis-server)"


@contextlib.contextmanager
def redis() -> Iterator[RedisServer]:
    binary = redis_binary()
    if binary is None:
        raise RuntimeError(available())
    with RedisServer(binary) as server:
        yield server


@contextlib.contextmanager
def node_path(echo: EchoServer, cross: bool) -> Iterator[paths.Measure]:
    """The echo call through two nodes sharing a Redis; the Computer on the Agent's node,
    or (`cross`) on the other."""
    from smcp_sync.agent import Agent
    from smcp_sync.connection.session import ReconnectPolicy

    office = f"bench-{uuid.uuid4().hex[:8]}"
    with redis() as shared, Peers() as peers:
        node_a = peers.start("smcp-server", "--redis", shared.url)["url"]
        node_b = peers.start("smcp-server", "--redis", shared.url)["url"]
        peers.computer(node_b if cross else node_a, office, "bench-c", echo.config())
        with Agent("bench-a", reconnect=ReconnectPolicy(enabled=False)) as agent:
            agent.connect(node_a, timeout=10)
            agent.join_office(office, timeout=10)
            call = lambda: paths.expect_text(agent.call_tool("bench-c", "echo", {"text": paths.TEXT}, paths.CALL_TIMEOUT))  # noqa: E731
            yield paths.measuring(call)


def registry_operations(quick: bool) -> list[dict[str, Any]]:
    """Operations per second of each registry call (one thread, loopback Redis)."""
    from smcp_sync.server.offices.office_rules import Handshake
    from smcp_sync.server.scale_out.redis_registry import RedisRegistry

    seconds = QUICK_REGISTRY_SECONDS if quick else REGISTRY_SECONDS
    with redis() as shared:
        # no heartbeat threads here: one beat makes each node alive for the whole measure
        here, there = RedisRegistry(shared.url, node_ttl=3600), RedisRegistry(shared.url, node_ttl=3600)
        try:
            for registry in (here, there):
                registry.beat()
            for registry, sid in ((here, "agent-sid"), (there, "remote-sid"), (here, "mover-sid")):
                registry.add_session(sid, Handshake(a2c_version="0.4.0"))
            here.join("agent-sid", "agent", "a", "bench")
            there.join("remote-sid", "computer", "far", "bench")

            def join_and_leave() -> None:
                here.join("mover-sid", "computer", "mover", "other")
                here.leave("mover-sid", "other")

            def find_afresh() -> None:
                with here._lock:  # what a node knows of other nodes' members, forgotten (seen_members)
                    here._seen.clear()
                here.find("bench", "computer", "far")

            operations: list[tuple[str, int, Callable[[], Any]]] = [
                ("join + leave (a Computer, own office)", 2, join_and_leave),
                ("find: member of another node, first time (1 round trip)", 1, find_afresh),
                ("find: member of another node, found before (no round trip)", 1, lambda: here.find("bench", "computer", "far")),
                ("members: office of 2 (1 round trip)", 1, lambda: here.members("bench")),
                ("find: member of this node (no round trip)", 1, lambda: here.find("bench", "agent", "a")),
            ]
            return [_rate(name, per_call, call, seconds) for name, per_call, call in operations]
        finally:
            here.close()
            there.close()


def _rate(name: str, per_call: int, call: Callable[[], Any], seconds: float) -> dict[str, Any]:
    count, started = 0, time.perf_counter()
    deadline = started + seconds
    while True:
        call()
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - started
    return {"operation": name, "calls": count, "ops_per_s": count * per_call / elapsed, "us_per_call": elapsed / count * 1e6}


def office_of_two(stack: contextlib.ExitStack, agent: Any, agent_url: str, computer_url: str, office: str) -> Any:
    """`agent` joined to `office` at `agent_url`, with a Computer ``pc`` at `computer_url`
    that answers every tool call with its name; both closed by `stack`."""
    from smcp_sync.connection.session import Connection
    from smcp_sync.protocol import events, to_wire
    from smcp_sync.protocol.models import CallToolResult, TextContent

    stack.enter_context(agent)
    agent.connect(agent_url, timeout=10)
    agent.join_office(office, timeout=10)
    computer = Connection("computer", "pc")
    stack.callback(computer.close)
    computer.on(events.TOOL_CALL, lambda payload: to_wire(CallToolResult(content=[TextContent(text="pc")])))
    computer.connect(computer_url, timeout=10)
    computer.join_office(office, 10)
    return agent


def failover(quick: bool) -> list[float]:
    """Seconds from each SIGKILL of the node holding the Agent and the Computer until the
    Agent has a call answered again, back in its office."""
    from urllib.parse import urlsplit

    from smcp_sync.agent import Agent
    from smcp_sync.protocol.errors import SMCPError
    from tests.scale_out.parts import Node
    from tests.scale_out.proxy import Proxy

    def address(node: Node) -> tuple[str, int]:
        parts = urlsplit(node.url)
        return str(parts.hostname), int(parts.port or 0)

    def answered(agent: Agent) -> bool:
        try:
            return agent.office_id == "failover" and agent.call_tool("pc", "who", {}, timeout=1.0).text == "pc"
        except SMCPError:
            return False

    times: list[float] = []
    with redis() as shared, contextlib.ExitStack() as stack:
        live = [Node(shared.url), Node(shared.url)]
        for node in live:
            stack.callback(node.stop)
        proxy = stack.enter_context(Proxy([address(node) for node in live]))
        agent = office_of_two(stack, Agent("bench-a"), proxy.url, proxy.url, "failover")
        for _ in range(QUICK_FAILOVER_KILLS if quick else FAILOVER_KILLS):
            spare = Node(shared.url)
            stack.callback(spare.stop)
            live.append(spare)
            proxy.backends = [address(node) for node in live]
            if not answered(agent):
                raise RuntimeError("the office is not whole before a kill")
            started = time.perf_counter()
            live.pop(0).kill()
            while not answered(agent):
                if time.perf_counter() - started > FAILOVER_LIMIT:
                    raise RuntimeError(f"no answer {FAILOVER_LIMIT:g} s after a kill")
                time.sleep(0.02)
            times.append(time.perf_counter() - started)
    return times
