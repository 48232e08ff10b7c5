"""A burst of registry calls on one Server node queues for Redis connections, never fails:
hundreds of `list_room` calls in flight at once against a real `redis-server`, held there
until most of the node's handler threads wait on Redis at once (CLIENT PAUSE of writes,
which holds scripts, lifted as soon as they do). redis-py's default pool refused every connection past its 100th at
once ("Too many connections": a 500 to the Agent, issue 32); the registry's pool has one
per handler thread and waits, bounded, for a free one (server/scale_out/redis_connection.py)."""

from __future__ import annotations

import contextlib
import threading
import uuid
from typing import Any

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import SMCPServer
from smcp_sync.connection.session import Connection
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.server import RedisOptions

from .parts import redis_server

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 20.0
AGENTS, CALLS_EACH = 20, 10
#: Handlers waiting on Redis at once before it answers again: past redis-py's default pool.
AT_ONCE = 150


def listing(agent: Connection, office: str) -> Any:
    """The names `list_room` lists, or the error code it failed with."""
    request = {"agent": "agent", "req_id": uuid.uuid4().hex, "office_id": office}
    try:
        return sorted(s["name"] for s in agent.call(events.LIST_ROOM, request, TIMEOUT)["sessions"])
    except SMCPError as exc:
        return exc.code


def test_hundreds_of_registry_calls_at_once_all_answer(no_leaks: None) -> None:
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        server = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        server.start()
        agents = [stack.enter_context(joined_connection("agent", "agent", server.url, f"o{i}", timeout=TIMEOUT)) for i in range(AGENTS)]
        answers: list[Any] = []
        lock = threading.Lock()
        start = threading.Barrier(AGENTS * CALLS_EACH + 1, timeout=TIMEOUT)

        def call(agent: Connection, office: str) -> None:
            start.wait()
            answer = listing(agent, office)
            with lock:
                answers.append(answer)

        callers = [
            threading.Thread(target=call, args=(agent, f"o{i}")) for i, agent in enumerate(agents) for _ in range(CALLS_EACH)
        ]
        for thread in callers:
            thread.start()
        pool = server.sio._handler_pool
        redis.command("CLIENT", "PAUSE", str(int(TIMEOUT * 1000)), "WRITE")  # scripts wait, CLIENT UNPAUSE does not
        try:
            start.wait()
            # most handlers wait on Redis at once (a refused connection answers at once)
            wait_until(lambda: pool.thread_count - pool.idle_count >= AT_ONCE or answers, TIMEOUT, "the burst at Redis")
        finally:
            redis.command("CLIENT", "UNPAUSE")
        for thread in callers:
            thread.join(TIMEOUT)
            assert not thread.is_alive()
        assert answers == [["agent"]] * (AGENTS * CALLS_EACH)
