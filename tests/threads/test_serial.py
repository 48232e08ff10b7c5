"""The serial thread the Agent's callbacks and the Computer's MCP server events run on."""

from __future__ import annotations

import threading

import pytest

from smcp_sync.threads.serial import Batches, SerialThread


@pytest.mark.timeout(10)
def test_work_runs_in_order_on_one_thread_and_survives_failures(no_leaks, caplog):
    serial = SerialThread("test-serial")
    assert not serial.submit(print, "not started")
    serial.start()
    seen: list[tuple[int, str]] = []
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("callback bug")

    for n in range(100):
        serial.submit(lambda n=n: seen.append((n, threading.current_thread().name)))
    serial.submit(boom)
    serial.submit(done.set)
    assert done.wait(5)
    serial.stop(timeout=5)

    assert [n for n, _ in seen] == list(range(100))
    assert {name for _, name in seen} == {"test-serial"}
    assert "callback bug" in caplog.text
    assert not serial.running and not serial.submit(print, "stopped")


@pytest.mark.timeout(10)
def test_stopping_from_inside_a_work_item_does_not_deadlock(no_leaks):
    serial = SerialThread("test-serial")
    serial.start()
    stopped = threading.Event()
    serial.submit(lambda: (serial.stop(timeout=5), stopped.set()))
    assert stopped.wait(5)
    assert not serial.running


@pytest.mark.timeout(10)
@pytest.mark.parametrize("finish_queued", [True, False])
def test_stop_finishes_or_drops_what_is_queued(no_leaks, finish_queued):
    serial = SerialThread("test-serial")
    serial.start()
    release, ran = threading.Event(), []
    serial.submit(release.wait, 5)
    for n in range(5):
        serial.submit(ran.append, n)
    threading.Timer(0.2, release.set).start()
    serial.stop(timeout=5, finish_queued=finish_queued)
    assert ran == ([0, 1, 2, 3, 4] if finish_queued else [])
    serial.start()  # and it starts again
    done = threading.Event()
    serial.submit(done.set)
    assert done.wait(5)
    serial.stop(timeout=5)


@pytest.mark.timeout(10)
def test_items_that_arrive_together_are_handed_over_as_one_batch(no_leaks):
    serial = SerialThread("test-batches")
    serial.start()
    busy, release = threading.Event(), threading.Event()
    batches: list[list[int]] = []

    def handle(batch: list[int]) -> None:
        batches.append(batch)
        if batch == [0]:
            busy.set()
            release.wait(5)

    posts: Batches[int] = Batches(serial, handle)
    posts.post(0)
    assert busy.wait(5)
    for n in range(1, 50):  # while the first batch is being handled
        posts.post(n)
    release.set()
    serial.stop(timeout=5, finish_queued=True)
    assert batches == [[0], list(range(1, 50))]
    posts.post(99)  # stopped: dropped, not kept for ever
    assert batches == [[0], list(range(1, 50))]
