"""Routing under a hung Redis (SIGSTOP, ~2 s), with two Server nodes in this process on a
real `redis-server`: the thread reading an Agent's socket never waits on Redis, so

* a call to a Computer of the Agent's own node is answered during the stall;
* a call to a Computer on the other node already called once (its place is remembered)
  is delivered after the stall; one never called before needs a Redis round trip to find
  it, made on the handler pool: those under way fail with a coded error when their read
  times out, those queued behind them are answered once Redis is back: none is lost, none
  waits out its timeout;
* the handler pool stays within its bound, nobody is disconnected, and no live node is
  declared dead (nobody leaves the office).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from typing import Any, Iterator

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import SMCPServer
from smcp_sync.connection.session import Connection
from smcp_sync.protocol import ErrorCode, events, to_wire
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.models import CallToolResult, TextContent
from smcp_sync.threads.worker_pool import WorkerPool
from smcp_sync.server import RedisOptions

from .parts import redis_server

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 20.0
#: Calls to Computers never called before, made during the stall: more than the pool's workers.
UNSEEN = 12
POOL_BOUND = 4


def answering(url: str, office: str, name: str) -> contextlib.AbstractContextManager[Any]:
    answer = lambda payload: to_wire(CallToolResult(content=[TextContent(text=name)]))  # noqa: E731
    return joined_connection("computer", name, url, office, timeout=TIMEOUT, handlers={events.TOOL_CALL: answer})


def failed(results: dict[str, Any], lock: threading.Lock) -> int:
    """How many calls failed with the registry's 500."""
    with lock:
        return sum(result == ErrorCode.INTERNAL_ERROR for result in results.values())


def outcome(agent: Connection, computer: str, timeout: float) -> Any:
    """The text of a call, or the error code it failed with."""
    request = {"agent": "agent", "req_id": uuid.uuid4().hex, "computer": computer, "tool_name": "who", "params": {}, "timeout": timeout}
    try:
        return agent.call(events.TOOL_CALL, request, timeout)["content"][0]["text"]
    except SMCPError as exc:
        return exc.code


@contextlib.contextmanager
def two_nodes(redis_url: str) -> Iterator[list[SMCPServer]]:
    with SMCPServer(redis=RedisOptions(redis_url)) as a, SMCPServer(redis=RedisOptions(redis_url)) as b:
        a.start(), b.start()
        yield [a, b]


class PoolSampler:
    """The most threads a Server's handler pool had, sampled while the stall lasts."""

    def __init__(self, pool: WorkerPool) -> None:
        self.most = 0
        self._pool = pool
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="test-pool-sampler")
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.most = max(self.most, self._pool.thread_count)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)


def test_calls_during_a_redis_stall_are_answered_or_refused_with_a_code_never_lost(no_leaks) -> None:
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        a, b = stack.enter_context(two_nodes(redis.url))
        pool = WorkerPool("smcp-server-worker", max_workers=POOL_BOUND, max_queued=2 * UNSEEN)
        a.sio._handler_pool.shutdown(5.0)
        a.sio._handler_pool = pool  # a small bound, so that the calls below exceed it
        # a bare Agent: ours would fetch each Computer's tools as it enters (routing to it)
        left: list[Any] = []  # leave notices: a node declared dead would have its members leave
        agent = stack.enter_context(
            joined_connection("agent", "agent", a.url, "o", timeout=TIMEOUT, handlers={events.LEAVE_OFFICE_NOTIFICATION: left.append})
        )
        sid = agent.sid
        stack.enter_context(answering(a.url, "o", "near"))
        stack.enter_context(answering(b.url, "o", "seen"))
        for i in range(UNSEEN):
            stack.enter_context(answering(b.url, "o", f"unseen-{i}"))
        assert outcome(agent, "seen", TIMEOUT) == "seen"  # its place is remembered from now on

        results: dict[str, Any] = {}
        lock = threading.Lock()

        def call(name: str, timeout: float) -> None:
            result = outcome(agent, name, timeout)
            with lock:
                results[name] = result

        sampler = PoolSampler(pool)
        redis.freeze()
        try:
            calls = [threading.Thread(target=call, args=(f"unseen-{i}", 15.0)) for i in range(UNSEEN)]
            calls.append(threading.Thread(target=call, args=("seen", 15.0)))
            for thread in calls:
                thread.start()
            # the lookups are under way: every worker waits on Redis, the others are queued
            under_way = lambda: (pool.thread_count, pool.idle_count, pool.queued_count) == (POOL_BOUND, 0, UNSEEN - POOL_BOUND)  # noqa: E731
            wait_until(under_way, TIMEOUT, "the lookups under way")
            near = outcome(agent, "near", 1.0)  # a lookup on the socket's reader would hold it ~2 s
            # the first lookups fail when their read times out (REDIS_TIMEOUT); Redis back
            # then, the queued ones (their reads just sent) are answered
            wait_until(lambda: failed(results, lock) == POOL_BOUND, TIMEOUT, "the first lookups failed")
        finally:
            redis.thaw()
        for thread in calls:
            thread.join(TIMEOUT)
            assert not thread.is_alive()
        sampler.close()

        assert near == "near"
        assert results["seen"] == "seen"  # delivered once Redis is back
        answered = {name for name, result in results.items() if result == name and name != "seen"}
        assert len(answered) == UNSEEN - POOL_BOUND and failed(results, lock) == POOL_BOUND, results
        assert sampler.most <= POOL_BOUND
        assert agent.connected and agent.sid == sid  # the same session
        assert left == []  # no live node was purged (the heartbeat's 5 s TTL outlasts the stall)
        assert outcome(agent, "unseen-0", TIMEOUT) == "unseen-0"  # and all is well after
