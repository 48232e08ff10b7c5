"""`InOrder`: one connection's messages in arrival order, from the first that may wait on
handled by a pool's thread, and the connection's close after them. Over a real
`WorkerPool`; through the reactor and gunicorn: test_reactor_served.py and
scale_out/test_reactor_redis.py."""

from __future__ import annotations

import threading
from typing import Iterator

import pytest

from smcp_sync.server.transport.in_order import InOrder
from smcp_sync.threads.worker_pool import WorkerPool

#: Seconds a test waits for the pool.
WAIT = 10.0


class Connection:
    """What a connection does with its messages: records each one (and its thread), and
    holds "WAIT" until `gate` is set; "FAIL" ends the connection, "RAISE" raises."""

    def __init__(self, pool: WorkerPool, pending: list[str]) -> None:
        self.gate = threading.Event()
        self.done = threading.Condition()
        self.log: list[tuple[str, str]] = []
        self.in_order = InOrder(pending, self.handle, lambda m: m == "WAIT", self.elsewhere, self.resumed, self.close)
        self._pool = pool

    def elsewhere(self, job) -> None:
        assert self._pool.submit(job)

    def handle(self, message: str) -> bool:
        if message == "WAIT":
            assert self.gate.wait(WAIT)
        if message == "RAISE":
            raise RuntimeError("a bug in a handler")
        self._record(message)
        return message != "FAIL"

    def resumed(self, ok: bool) -> None:
        self._record(f"resumed {ok}")

    def close(self) -> None:
        self._record("closed")

    def _record(self, what: str) -> None:
        with self.done:
            self.log.append((what, threading.current_thread().name))
            self.done.notify_all()

    def wait_for(self, what: str) -> list[str]:
        with self.done:
            assert self.done.wait_for(lambda: what in (w for w, _ in self.log), WAIT)
            return [w for w, _ in self.log]


@pytest.fixture
def pool(no_leaks) -> Iterator[WorkerPool]:
    pool = WorkerPool("test-elsewhere", max_workers=2)
    yield pool
    pool.shutdown()


def test_from_the_first_message_that_may_wait_on_the_rest_go_elsewhere_in_order(pool):
    connection = Connection(pool, ["here", "WAIT", "after"])
    assert connection.in_order.take() is None
    assert connection.in_order.away and connection.log == [("here", "MainThread")]
    connection.gate.set()
    assert connection.wait_for("resumed True") == ["here", "WAIT", "after", "resumed True"]
    assert "MainThread" not in {thread for _, thread in connection.log[1:]}
    assert not connection.in_order.away


def test_a_connection_that_ends_meanwhile_is_closed_after_its_messages_elsewhere(pool):
    connection = Connection(pool, ["WAIT", "after"])
    assert connection.in_order.take() is None
    connection.in_order.end()
    connection.gate.set()
    assert connection.wait_for("closed") == ["WAIT", "after", "closed"]  # never resumed


def test_a_message_that_ends_the_connection_elsewhere_is_told(pool):
    connection = Connection(pool, ["WAIT", "FAIL", "never"])
    connection.gate.set()
    assert connection.in_order.take() is None
    assert connection.wait_for("resumed False") == ["WAIT", "FAIL", "resumed False"]


def test_a_handler_that_raises_elsewhere_ends_the_connection_and_never_leaves_it_unread(pool):
    connection = Connection(pool, ["WAIT", "RAISE", "never"])
    connection.gate.set()
    assert connection.in_order.take() is None
    assert connection.wait_for("resumed False") == ["WAIT", "resumed False"]
    assert not connection.in_order.away


def test_with_nothing_elsewhere_messages_are_handled_here_and_the_close_runs_elsewhere(pool):
    connection = Connection(pool, ["one", "two"])
    assert connection.in_order.take() is True
    assert connection.log == [("one", "MainThread"), ("two", "MainThread")]
    connection.in_order.end()
    assert connection.wait_for("closed") == ["one", "two", "closed"]
    assert connection.log[-1][1] != "MainThread"


def test_take_all_handles_even_what_may_wait_here(pool):
    connection = Connection(pool, ["WAIT", "FAIL", "never"])
    connection.gate.set()
    assert connection.in_order.take_all() is False
    assert connection.log == [("WAIT", "MainThread"), ("FAIL", "MainThread")]
