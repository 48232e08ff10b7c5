"""The Agent's parts on their own: the ticketed cache, the dispatcher thread, and how
notifications are validated (sent by a raw Socket.IO server that can send anything)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from smcp_sync.agent import Agent, ComputerCache
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import NotFoundError
from smcp_sync.protocol.models import UpdateComputerConfigReq

try:
    from tests.agent.raw_server import NAMESPACE, RawServer
except ImportError:  # tests/ itself is on sys.path
    from agent.raw_server import NAMESPACE, RawServer


# -- ComputerCache ---------------------------------------------------------------------------


def test_the_fetch_started_last_wins_whatever_order_answers_arrive_in():
    cache: ComputerCache[str] = ComputerCache()
    older, newer = cache.ticket(), cache.ticket()
    assert cache.store("c1", "new", newer)
    assert not cache.store("c1", "old", older)
    assert cache.get("c1") == "new"
    assert cache.store("c2", "other", older)  # tickets are per computer
    assert cache.snapshot() == {"c1": "new", "c2": "other"} and cache.computers() == ["c1", "c2"]


def test_a_drop_or_clear_is_not_undone_by_a_fetch_started_before_it():
    cache: ComputerCache[str] = ComputerCache()
    before_drop = cache.ticket()
    cache.drop("c1")
    assert not cache.store("c1", "stale", before_drop) and "c1" not in cache
    assert cache.store("c1", "fresh", cache.ticket())

    before_clear = cache.ticket()
    cache.clear()
    assert not cache.store("c2", "stale", before_clear)
    assert cache.snapshot() == {}
    assert cache.store("c2", "fresh", cache.ticket())


@pytest.mark.timeout(10)
def test_wait_for_returns_the_value_once_stored_or_a_change(no_leaks):
    cache: ComputerCache[str] = ComputerCache()
    assert cache.wait_for("c1", timeout=0.05) is None
    storer = threading.Timer(0.05, lambda: cache.store("c1", "v1", cache.ticket()))
    storer.start()
    assert cache.wait_for("c1", timeout=5) == "v1"
    storer.join()
    assert cache.wait_for("c1", timeout=0.05, unlike="v1") is None
    changer = threading.Timer(0.05, lambda: cache.store("c1", "v2", cache.ticket()))
    changer.start()
    assert cache.wait_for("c1", timeout=5, unlike="v1") == "v2"
    changer.join()


# -- notifications from a server that sends anything -------------------------------------------


@pytest.mark.timeout(20)
def test_invalid_notifications_are_dropped_and_callback_failures_do_not_stop_others(no_leaks, caplog):
    raw = RawServer()
    url = raw.start()
    try:
        with Agent("a1") as agent:
            seen: list[object] = []
            done = threading.Event()

            def broken(notification) -> None:
                raise RuntimeError("callback bug")

            agent.on(events.UPDATE_FINDER_NOTIFICATION, broken)
            agent.on(events.UPDATE_FINDER_NOTIFICATION, lambda n: (seen.append(n), done.set()))
            agent.connect(url, timeout=5)
            agent.join_office("o1", timeout=5)
            with caplog.at_level(logging.WARNING, logger="smcp_sync"):
                raw.sio.emit(events.ENTER_OFFICE_NOTIFICATION, {"computer": "c1"}, room="o1", namespace=NAMESPACE)
                raw.sio.emit(events.UPDATE_FINDER_NOTIFICATION, ["not", "an", "object"], room="o1", namespace=NAMESPACE)
                raw.sio.emit(events.UPDATE_FINDER_NOTIFICATION, {"computer": "c1"}, room="o1", namespace=NAMESPACE)
                assert done.wait(5)
                # The three events are handled on separate threads, in any order.
                deadline = time.monotonic() + 5
                while caplog.text.count("ignored an invalid") < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)

            assert seen == [UpdateComputerConfigReq(computer="c1")]
            assert (
                "ignored an invalid notify:enter_office: invalid EnterOfficeNotification: "
                "required field missing @ $.office_id" in caplog.text
            )
            assert "ignored an invalid notify:update_finder: invalid UpdateComputerConfigReq: expected an object" in caplog.text
            assert "callback bug" in caplog.text
    finally:
        raw.stop()


@pytest.mark.timeout(20)
def test_an_empty_answer_is_a_clear_404_at_once(no_leaks):
    raw = RawServer()
    url = raw.start()
    try:
        with Agent("a1") as agent:
            agent.connect(url, timeout=5)
            agent.join_office("o1", timeout=5)
            with pytest.raises(NotFoundError) as empty:
                agent.get_config("c1", timeout=5)
            assert empty.value.message == "empty answer to client:get_config: the Server or Computer does not handle it"
    finally:
        raw.stop()
