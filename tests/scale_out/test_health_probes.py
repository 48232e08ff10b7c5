"""`/health/ready` of a Server node on a real `redis-server`: 503 within a bound when
Redis hangs (SIGSTOP) or is killed, 200 again once it is back (after a restart: once the
node has written its members back); `/health/live` answers 200 throughout. And the
registry's metrics: epoch changes, write-backs (written and refused), purges of a dead
node's members, lookups of another node's members."""

from __future__ import annotations

import contextlib
from typing import Iterator

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection
from server.http_probe import probe
from server.metrics_scrape import scrape, value

from smcp_sync import Agent, SMCPServer
from smcp_sync.connection.session import ReconnectPolicy
from smcp_sync.protocol import events
from smcp_sync.server import RedisOptions

from .node import node as node_on
from .parts import RedisServer, redis_server

pytestmark = pytest.mark.timeout(120)

NODE_TTL = 5.0  # redis_registry.DEFAULT_NODE_TTL
#: How soon readiness must follow Redis: a heartbeat is stale after `node_ttl`, plus the
#: probe's own time on a loaded machine.
BOUND = NODE_TTL + 3.0
TIMEOUT = 20.0
#: A heartbeat every 900 s: the test beats.
IDLE_TTL = 3600.0
NO_RECONNECT = ReconnectPolicy(enabled=False)


@contextlib.contextmanager
def node(redis: RedisServer) -> Iterator[SMCPServer]:
    with SMCPServer(redis=RedisOptions(redis.url)) as server:
        server.start()
        yield server


def status(server: SMCPServer, path: str) -> int:
    assert server.url is not None
    return probe(server.url + path)[0]


def ready(server: SMCPServer) -> bool:
    return status(server, "/health/ready") == 200


def test_ready_follows_a_redis_that_hangs_and_comes_back(no_leaks):
    with redis_server() as redis, node(redis) as server:
        assert probe(server.url + "/health/ready") == (
            200,
            {
                "status": "ready",
                "accepting": True,
                "registry": {
                    "ready": True, "kind": "redis", "reachable": True, "settled": True,
                    "last_heartbeat_age": pytest.approx(0, abs=NODE_TTL),
                },
            },
        )
        redis.freeze()
        try:
            wait_until(lambda: not ready(server), BOUND, "503 while Redis hangs")
            code, body = probe(server.url + "/health/ready")
            assert (code, body["registry"]["reachable"]) == (503, False)
            assert status(server, "/health/live") == 200
        finally:
            redis.thaw()
        wait_until(lambda: ready(server), BOUND, "200 once Redis answers again")


def test_ready_follows_a_redis_killed_and_restarted_empty(no_leaks):
    with redis_server() as redis, node(redis) as server, Agent("agent", reconnect=ReconnectPolicy(enabled=False)) as agent:
        agent.connect(server.url, timeout=TIMEOUT)
        agent.join_office("kept", timeout=TIMEOUT)
        redis.stop()  # SIGTERM, no persistence: it comes back empty
        wait_until(lambda: not ready(server), BOUND, "503 while Redis is down")
        assert status(server, "/health/live") == 200
        redis.start()
        wait_until(lambda: ready(server), BOUND, "200 once the node has written its members back")
        assert [(s.role, s.name) for s in agent.list_room(timeout=TIMEOUT)] == [("agent", "agent")]
        samples = scrape(server.url)
        assert value(samples, "smcp_registry_epoch_changes_total") == 1
        assert value(samples, "smcp_registry_write_backs_total", outcome="written") == 1
        assert value(samples, "smcp_registry_ready") == 1
        # python-socketio's listener subscribes again after a backoff of its own (readiness
        # does not wait for it); stopping the node before then would leave it retrying
        channel = server.registry.prefix + "socketio"
        wait_until(lambda: redis.command("PUBSUB", "NUMSUB", channel)[1] == 1, TIMEOUT, "the listener back")


def test_a_member_of_another_node_is_looked_up_once(no_leaks):
    """The first call to a Computer of another node finds it in Redis (timed); later
    calls recall where it was seen. A bare Agent connection: one request at a time (an
    Agent's own refreshes on joining would look up beside the first call)."""
    answer = {events.GET_TOOLS: lambda payload: {"tools": [], "req_id": payload["req_id"]}}
    with (
        redis_server() as redis,
        node(redis) as a,
        node(redis) as b,
        joined_connection("computer", "pc", b.url, "o1", timeout=TIMEOUT, handlers=answer),
        joined_connection("agent", "agent", a.url, "o1", timeout=TIMEOUT) as agent,
    ):
        for index in range(3):
            request = {"agent": "agent", "computer": "pc", "req_id": f"r{index}"}
            assert agent.call(events.GET_TOOLS, request, TIMEOUT) == {"tools": [], "req_id": f"r{index}"}
        samples = scrape(a.url)
    assert value(samples, "smcp_registry_lookup_duration_seconds_count") == 1
    assert value(samples, "smcp_requests_total", event="client:get_tools", code="ok") == 3


def test_a_dead_nodes_members_purged_and_a_taken_place_refused_are_counted_exactly(no_leaks):
    """Node A is declared dead (its heartbeat gone, as when its TTL runs out while it
    stalls): B purges its three members; a Computer on B takes the name of one; A, beating
    again, writes two back and is refused the third."""
    members = [("computer", "pc", "o1"), ("computer", "pc2", "o2"), ("agent", "agent", "o2")]
    with (
        redis_server() as redis,
        node_on(redis.url, None, IDLE_TTL) as a,
        node_on(redis.url, None, IDLE_TTL) as b,
        contextlib.ExitStack() as clients,
    ):
        a.start()
        b.start()
        for role, name, office in members:
            clients.enter_context(joined_connection(role, name, a.url, office, timeout=TIMEOUT, reconnect=NO_RECONNECT))
        redis.command("DEL", a.registry.prefix + f"alive:{a.registry.incarnation}")
        b.registry.beat()
        purged = scrape(b.url)
        with joined_connection("computer", "pc", b.url, "o1", timeout=TIMEOUT, reconnect=NO_RECONNECT):
            a.registry.beat()
            written_back = scrape(a.url)
    assert value(purged, "smcp_registry_purged_members_total") == 3
    assert value(purged, "smcp_office_leaves_total", role="computer", reason="purged") == 2
    assert value(purged, "smcp_office_leaves_total", role="agent", reason="purged") == 1
    assert value(written_back, "smcp_registry_write_backs_total", outcome="refused") == 1
    assert value(written_back, "smcp_registry_write_backs_total", outcome="written") == 2
    assert value(written_back, "smcp_registry_epoch_changes_total") == 1
    assert value(written_back, "smcp_registry_purged_members_total") == 0
