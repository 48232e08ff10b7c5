"""The elastic, bounded worker pool: every job runs exactly once, at once on reused threads
within `max_workers`, queued past it, refused past `max_queued`."""

from __future__ import annotations

import logging
import threading
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcp_sync.threads.worker_pool import WorkerPool

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def pool(no_leaks):
    pool = WorkerPool("test-worker")
    yield pool
    assert pool.shutdown(5.0)


def test_every_job_runs_exactly_once_from_many_submitters(pool):
    ran: Counter[int] = Counter()
    lock = threading.Lock()
    all_done = threading.Event()
    total = 8 * 250

    def job(n: int) -> None:
        with lock:
            ran[n] += 1
            if sum(ran.values()) == total:
                all_done.set()

    def submitter(base: int) -> None:
        for i in range(250):
            assert pool.submit(job, base + i)

    submitters = [threading.Thread(target=submitter, args=(k * 1000,)) for k in range(8)]
    for t in submitters:
        t.start()
    for t in submitters:
        t.join(10)
    assert all_done.wait(10)
    assert set(ran.values()) == {1}
    assert len(ran) == total


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=6),
       idle_timeout=st.sampled_from([0.0, 0.001, 0.01, 30.0]))
def test_no_job_is_lost_when_workers_time_out_while_work_arrives(no_leaks, batches, idle_timeout):
    """Idle timeouts racing hand-overs: each job still runs once."""
    pool = WorkerPool("race-worker", max_idle=2, idle_timeout=idle_timeout)
    done = threading.Semaphore(0)
    ran: list[int] = []
    try:
        n = 0
        for size in batches:
            for _ in range(size):
                pool.submit(lambda i: (ran.append(i), done.release()), n)
                n += 1
            for _ in range(size):
                assert done.acquire(timeout=5)
        assert sorted(ran) == list(range(n))
    finally:
        assert pool.shutdown(5.0)


def test_a_blocked_job_never_delays_another(pool):
    release = threading.Event()
    started = threading.Event()
    second_ran = threading.Event()
    pool.submit(lambda: (started.set(), release.wait(10)))
    assert started.wait(5)
    pool.submit(second_ran.set)
    assert second_ran.wait(5)  # while the first still blocks
    assert not release.is_set()
    release.set()


def test_many_simultaneously_blocked_jobs_each_get_a_thread(pool):
    """Within `max_workers`: 50 jobs that only finish together (a barrier) all run at once."""
    barrier = threading.Barrier(51)
    for _ in range(50):
        pool.submit(barrier.wait, 10)
    barrier.wait(10)  # raises BrokenBarrierError if any job were queued behind another


def test_past_max_workers_jobs_queue_in_order_and_past_max_queued_are_refused(no_leaks, caplog):
    pool = WorkerPool("bounded", max_workers=3, max_queued=2)
    release = threading.Event()
    started = threading.Barrier(4)
    ran: list[int] = []
    all_ran = threading.Event()

    def queued(n: int) -> None:
        ran.append(n)
        if len(ran) == 2:
            all_ran.set()

    try:
        for _ in range(3):
            assert pool.submit(lambda: (started.wait(5), release.wait(10)))
        started.wait(5)
        assert pool.submit(queued, 1) and pool.submit(queued, 2)
        with caplog.at_level(logging.WARNING, logger="smcp_sync.threads.worker_pool"):
            assert pool.submit(queued, 3) is False
        assert "bounded pool is full (3 workers busy, 2 jobs waiting): refused 1 jobs" in caplog.text
        assert (pool.thread_count, pool.queued_count, ran) == (3, 2, [])
        release.set()
        assert all_ran.wait(5)
        assert ran == [1, 2]  # first in, first run; the refused one never
        _wait_until(lambda: pool.queued_count == 0 and pool.idle_count == 3)
        assert pool.thread_count == 3
    finally:
        release.set()
        assert pool.shutdown(5.0)


def test_a_job_queued_while_the_only_worker_times_out_still_runs(no_leaks):
    """max_workers=1 and idle timeouts racing submits: a job queued as the worker leaves
    is taken by it or by a new one, never stranded."""
    for _ in range(200):
        pool = WorkerPool("one", max_workers=1, max_queued=10, idle_timeout=0.0)
        done = threading.Semaphore(0)
        try:
            for _ in range(3):
                assert pool.submit(done.release)
            for _ in range(3):
                assert done.acquire(timeout=5)
        finally:
            assert pool.shutdown(5.0)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="max_workers must be >= 1 and max_queued >= 0, not 0 and 1"):
        WorkerPool("bad", max_workers=0, max_queued=1)


def test_sequential_submits_reuse_one_thread(pool):
    names: list[str] = []
    for _ in range(100):
        done = threading.Event()
        pool.submit(lambda: (names.append(threading.current_thread().name), done.set()))
        assert done.wait(5)
        _wait_until(lambda: pool.idle_count == 1)
    assert len(set(names)) == 1
    assert names[0].startswith("test-worker-")
    assert pool.thread_count == 1


def test_idle_workers_beyond_max_idle_exit_and_idle_ones_time_out(no_leaks):
    pool = WorkerPool("cap-worker", max_idle=3, idle_timeout=0.2)
    try:
        barrier = threading.Barrier(11)
        for _ in range(10):
            pool.submit(barrier.wait, 10)
        barrier.wait(10)
        _wait_until(lambda: pool.thread_count == 3)  # the rest exit instead of parking
        _wait_until(lambda: pool.thread_count == 0)  # then the parked ones time out
        ran = threading.Event()
        assert pool.submit(ran.set)  # and a new worker starts for new work
        assert ran.wait(5)
    finally:
        assert pool.shutdown(5.0)


def test_exceptions_are_logged_and_the_worker_survives(pool, caplog):
    def boom() -> None:
        raise ValueError("job exploded")

    with caplog.at_level(logging.ERROR, logger="smcp_sync.threads.worker_pool"):
        pool.submit(boom)
        _wait_until(lambda: pool.idle_count == 1)
    assert "job exploded" in caplog.text
    ran = threading.Event()
    pool.submit(ran.set)
    assert ran.wait(5)
    assert pool.thread_count == 1


def test_shutdown_joins_busy_and_idle_workers_and_refuses_new_work(no_leaks):
    pool = WorkerPool("stop-worker")
    release = threading.Event()
    started = threading.Barrier(4)
    for _ in range(3):
        pool.submit(lambda: (started.wait(5), release.wait(10)))
    started.wait(5)
    idle_done = threading.Event()
    pool.submit(idle_done.set)
    assert idle_done.wait(5)
    assert pool.shutdown(0.1) is False  # three still busy: bounded, reports it
    release.set()
    assert pool.shutdown(5.0) is True
    assert pool.thread_count == 0
    assert pool.submit(print) is False


def test_shutdown_racing_submits_joins_every_worker_it_lists(no_leaks):
    """A shutdown between a submit's new worker and its start once joined an unstarted
    thread ('cannot join thread before it is started', seen in CI on py310)."""
    for _ in range(200):
        pool = WorkerPool("race", idle_timeout=5)
        submitters = [threading.Thread(target=pool.submit, args=(lambda: None,)) for _ in range(4)]
        for submitter in submitters:
            submitter.start()
        assert pool.shutdown(timeout=5)
        for submitter in submitters:
            submitter.join(5)
        assert pool.shutdown(timeout=5) and pool.thread_count == 0


def test_shutdown_from_a_worker_does_not_wait_for_itself(no_leaks):
    pool = WorkerPool("self-stop")
    result: list[bool] = []
    done = threading.Event()
    pool.submit(lambda: (result.append(pool.shutdown(5.0)), done.set()))
    assert done.wait(5)
    assert result == [True]
    _wait_until(lambda: pool.thread_count == 0)


def _wait_until(condition, timeout: float = 5.0) -> None:
    """Poll a pool counter (there is no event to wait on for a thread parking itself)."""
    deadline = threading.Event()
    for _ in range(int(timeout / 0.005)):
        if condition():
            return
        deadline.wait(0.005)
    assert condition()


# -- the pools in use: Server event handlers and Connection message handlers ----------------


@pytest.fixture
def served(no_leaks):
    from smcp_sync.server import SMCPServer

    server = SMCPServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def connected(served):
    from smcp_sync.connection.session import Connection

    connection = Connection("agent", "a1")
    connection.connect(served.url, timeout=5)
    yield connection
    connection.close()


def test_server_event_handlers_run_on_reused_pool_threads(served, connected):
    names: list[str] = []
    served.sio.on("probe", lambda sid, payload: names.append(threading.current_thread().name) or {"n": payload["n"]},
                  namespace="/smcp")
    answers = [connected.call("probe", {"n": n}, timeout=5) for n in range(30)]
    assert answers == [{"n": n} for n in range(30)]
    assert all(name.startswith("smcp-server-worker-") for name in names)
    # Sequential calls: a parked worker is handed the next event (a thread per event would
    # be 30). Under load a worker may still be parking when the next event comes, so a
    # few; exact reuse is test_sequential_submits_reuse_one_thread's (4 seen in CI, py312).
    assert len(set(names)) <= 5


def test_a_blocked_server_handler_does_not_delay_the_next_event(served, connected):
    """A routed handler waits for a Computer's answer; a cancel must still run at once."""
    release, blocked = threading.Event(), threading.Event()
    served.sio.on("block", lambda sid, payload: (blocked.set(), release.wait(10)) and {"done": True}, namespace="/smcp")
    served.sio.on("probe", lambda sid, payload: {"ok": True}, namespace="/smcp")
    connected.emit("block", {})
    assert blocked.wait(5)
    assert connected.call("probe", {}, timeout=5) == {"ok": True}
    release.set()


def test_a_full_server_pool_answers_500_busy_at_once(served, connected):
    """Events past the handler pool's bounds get a coded refusal, not a wait for the
    caller's timeout; the pool's threads stay within `max_workers`."""
    served.sio._handler_pool.shutdown(5.0)
    served.sio._handler_pool = WorkerPool("smcp-server-worker", max_workers=2, max_queued=1)
    release, blocked = threading.Event(), threading.Semaphore(0)
    served.sio.on("block", lambda sid, payload: (blocked.release(), release.wait(10)) and {"done": True}, namespace="/smcp")
    try:
        for _ in range(3):  # two run, one waits
            connected.emit("block", {})
        for _ in range(2):
            assert blocked.acquire(timeout=5)
        _wait_until(lambda: served.sio._handler_pool.queued_count == 1)
        from smcp_sync.protocol.errors import InternalError

        with pytest.raises(InternalError, match=r"\[500\] the Server is busy \(2 handlers running, 1 waiting\); try again"):
            connected.call("block", {}, timeout=5)
        assert served.sio._handler_pool.thread_count == 2
    finally:
        release.set()


def test_a_full_connection_pool_answers_500_busy_at_once(served):
    from smcp_sync.connection.session import Connection

    connection = Connection("agent", "a1")
    connection._pool = WorkerPool("smcp-agent-worker", max_workers=1, max_queued=0)
    release, blocked = threading.Event(), threading.Event()
    connection.on("ask", lambda payload: (blocked.set(), release.wait(10)) and {"done": True})
    connection.connect(served.url, timeout=5)
    try:
        served.sio.emit("ask", {}, to=connection.sid, namespace="/smcp")
        assert blocked.wait(5)
        refusal = served.sio.call("ask", {}, to=connection.sid, namespace="/smcp", timeout=5)
        assert refusal["code"] == 500 and refusal["message"].startswith("this client is busy (1 handlers running, 0 waiting)")
    finally:
        release.set()
        connection.close()


def test_connection_message_handlers_run_on_reused_pool_threads(served, connected):
    names: list[str] = []
    connected.on("ask", lambda payload: names.append(threading.current_thread().name) or {"echo": payload["n"]})
    answers = [served.sio.call("ask", {"n": n}, to=connected.sid, namespace="/smcp", timeout=5) for n in range(30)]
    assert answers == [{"echo": n} for n in range(30)]
    assert all(name.startswith("smcp-agent-worker-") for name in names)
    assert len(set(names)) <= 5  # as for the Server's handlers above


def test_a_connection_can_reconnect_after_close_with_a_fresh_pool(served, connected):
    connected.on("ask", lambda payload: threading.current_thread().name)
    first = served.sio.call("ask", {}, to=connected.sid, namespace="/smcp", timeout=5)
    connected.close()
    assert not any(t.name == first and t.is_alive() for t in threading.enumerate())
    connected.connect(served.url, timeout=5)
    second = served.sio.call("ask", {}, to=connected.sid, namespace="/smcp", timeout=5)
    assert second.startswith("smcp-agent-worker-") and second != first
