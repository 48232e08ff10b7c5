"""`smcp_sync.threads.deadlines.Deadlines`: one thread calling actions at their deadlines."""

from __future__ import annotations

import threading
import time

import pytest

from smcp_sync.threads.deadlines import Deadlines

pytestmark = pytest.mark.timeout(20)


def _threads(name: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name == name)


@pytest.fixture
def deadlines(no_leaks):
    timer = Deadlines("test-deadlines", idle_timeout=0.2)
    yield timer
    timer.shutdown()


def test_actions_run_in_deadline_order_not_in_scheduling_order(deadlines):
    fired: list[str] = []
    done = threading.Event()
    now = time.monotonic()
    deadlines.call_at(now + 0.15, lambda: fired.append("late") or done.set())
    deadlines.call_at(now + 0.05, lambda: fired.append("early"))  # earlier than the one it waits for
    deadlines.call_at(now - 1, lambda: fired.append("overdue"))
    assert done.wait(5)
    assert fired == ["overdue", "early", "late"]
    assert time.monotonic() - now >= 0.15


def test_a_cancelled_deadline_never_fires_and_is_not_counted(deadlines):
    fired = threading.Event()
    kept = threading.Event()
    now = time.monotonic()
    cancelled = deadlines.call_at(now + 0.05, fired.set)
    deadlines.call_at(now + 0.1, kept.set)
    assert len(deadlines) == 2
    cancelled.cancel()
    cancelled.cancel()  # idempotent
    assert len(deadlines) == 1
    assert kept.wait(5)
    assert not fired.is_set() and len(deadlines) == 0


def test_many_cancelled_deadlines_are_dropped_from_the_heap(deadlines):
    far = time.monotonic() + 60
    entries = [deadlines.call_at(far, lambda: None) for _ in range(2000)]
    for entry in entries[:1500]:
        entry.cancel()
    assert len(deadlines) == 500
    assert len(deadlines._heap) <= 1000  # compacted (at 1,000 cancelled), not 2,000 entries kept for a minute


def test_a_failing_action_is_logged_and_the_next_one_still_runs(deadlines, caplog):
    ran = threading.Event()
    now = time.monotonic()
    deadlines.call_at(now, lambda: 1 / 0)
    deadlines.call_at(now + 0.01, ran.set)
    assert ran.wait(5)
    assert "deadline action" in caplog.text and "ZeroDivisionError" in caplog.text


def test_the_thread_starts_with_the_first_deadline_ends_when_idle_and_starts_again(deadlines):
    assert _threads("test-deadlines") == 0
    first = threading.Event()
    deadlines.call_at(time.monotonic(), first.set)
    assert first.wait(5)
    deadline = time.monotonic() + 5
    while _threads("test-deadlines") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _threads("test-deadlines") == 0  # idle_timeout 0.2 s
    again = threading.Event()
    deadlines.call_at(time.monotonic(), again.set)
    assert again.wait(5)


def test_shutdown_stops_the_thread_promptly_and_a_later_deadline_restarts_it(deadlines):
    deadlines.call_at(time.monotonic() + 60, lambda: None)
    assert _threads("test-deadlines") == 1
    started = time.monotonic()
    deadlines.shutdown(timeout=5)
    assert time.monotonic() - started < 1
    assert _threads("test-deadlines") == 0
    fired = threading.Event()
    deadlines.call_at(time.monotonic(), fired.set)
    assert fired.wait(5)
