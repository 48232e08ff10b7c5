"""The one resource-channel mechanism behind Desktop and Finder: the URI cache, the
debouncer, and change detection against real MCP servers (enumeration over pages,
subscriptions, list_changed / updated, bursts, crashes, servers added and removed)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from smcp_sync.computer import Computer
from smcp_sync.computer.channels.channel import ResourceChannel
from smcp_sync.computer.channels.uri_cache import UriCache
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BadRequestError
from smcp_sync.protocol.models import Resource
from smcp_sync.threads.debounce import Debouncer
from smcp_sync.computer import ChannelOptions

from ..helpers import EventLog, wait_until, write_state
from ..resource_helpers import (
    QUICK,
    Announcements,
    process_serving,
    resource_config,
    unsubscribable_config,
)

pytestmark = pytest.mark.timeout(60)

DESKTOP, FINDER = events.UPDATE_DESKTOP, events.UPDATE_FINDER


def window(name: str, text: str = "", priority: int | None = None) -> dict[str, Any]:
    query = f"?priority={priority}" if priority is not None else ""
    return {"uri": f"window://app/{name}{query}", "name": name, "text": text or f"{name} body"}


DOC = {
    "uri": "dpe://docs/a",
    "name": "a",
    "json": {"doc_ref": "a", "uri": "dpe://docs/a", "file_uri": "file:///a.md", "file_type": "md", "title": "A",
             "page_count": 1},
}  # fmt: skip


# -- the URI cache ------------------------------------------------------------------------


def test_a_listing_is_a_change_only_when_its_uri_set_differs() -> None:
    cache = UriCache()
    assert cache.replace("s", 1, []) is False  # a new server without URIs changes nothing
    assert cache.replace("s", 1, ["w://a", "w://b"]) is True
    assert cache.replace("s", 1, ["w://b", "w://a", "w://a"]) is False  # order and repeats do not matter
    assert cache.uris("s") == ("w://b", "w://a")
    assert cache.replace("s", 1, ["w://b"]) is True
    assert cache.forget("s") is True and cache.forget("s") is False
    assert cache.replace("t", 1, []) is False and cache.forget("t") is False


def test_values_are_kept_only_for_subscribed_uris_and_dropped_by_changes() -> None:
    cache = UriCache()
    cache.replace("s", 1, ["a", "b", "c"])
    cache.subscribed("s", 1, ["a", "b", "elsewhere"])
    values, ticket = cache.cached("s")
    assert values == {} and ticket is not None
    assert cache.store("s", {uri: uri.upper() for uri in "abc"}, ticket) is False  # not all kept...
    assert cache.cached("s")[0] == {"a": "A", "b": "B"}  # ...c: nobody would say it changed

    cache.invalidate("s", "a")  # a listed URI: only its value goes
    assert cache.cached("s")[0] == {"b": "B"}
    cache.invalidate("s", "a/pages/0")  # an unlisted one (a page): every value of the server goes
    assert cache.cached("s")[0] == {}

    _, ticket = cache.cached("s")
    cache.invalidate("s", "b")
    assert cache.store("s", {"b": "stale?", "a": "A"}, ticket) is False  # b changed during the read...
    assert cache.cached("s")[0] == {"a": "A"}  # ...a did not: one notice spoils no other read

    _, ticket = cache.cached("s")
    cache.invalidate("s", "a/pages/1")
    assert cache.store("s", {"b": "B"}, ticket) is False and cache.cached("s")[0] == {}  # everything changed

    _, ticket = cache.cached("s")
    assert cache.store("s", {"a": "A"}, ticket) is True
    assert cache.replace("s", 1, ["a", "b"]) is True and cache.cached("s")[0] == {"a": "A"}
    assert cache.replace("s", 2, ["a", "b"]) is False  # a new session...
    assert cache.cached("s")[0] == {}  # ...may serve anything: values and subscriptions start over
    assert cache.store("s", {"a": "A"}, cache.cached("s")[1]) is False
    assert cache.cached("ghost") == ({}, None)


def test_a_read_that_started_before_its_subscription_is_not_kept() -> None:
    cache = UriCache()
    cache.replace("s", 1, ["a"])
    _, before = cache.cached("s")
    cache.subscribed("s", 1, ["a"])
    assert cache.store("s", {"a": "read before anyone listened"}, before) is False
    cache.subscribed("s", 0, ["a"])  # an old session's subscription counts for nothing
    assert cache.store("s", {"a": "A"}, cache.cached("s")[1]) is True


def test_the_warm_up_queue_follows_listings_changes_and_subscriptions() -> None:
    cache = UriCache()
    cache.replace("plain", 1, ["x"])  # no subscriptions: nothing to warm, read on demand
    assert cache.take_subscribing("plain", 10) is None and cache.take_warming("plain", 10) is None
    assert cache.unread("plain", ["x"])[0] == ["x"]

    cache.replace("s", 1, ["a", "b", "c"], subscribable=True)
    assert cache.unread("s", ["a", "b", "c"])[0] == []  # the warm-up reads them: readers do not
    assert cache.progress() == [("s", 3, 3)]
    assert cache.take_warming("s", 10) is None  # nothing is read before it is subscribed to
    first = cache.take_subscribing("s", 2)
    assert first == (1, ["a", "b"])
    cache.replace("s", 1, ["a", "b", "c"], subscribable=True)  # listed again meanwhile: no second subscription
    assert cache.take_subscribing("s", 10) == (1, ["c"])
    assert cache.subscribed("s", 1, ["a"], asked=first.uris) is False  # b refused; nothing owed
    assert cache.unread("s", ["a", "b", "c"])[0] == ["b"]  # b is left to readers
    reading = cache.take_warming("s", 10)
    assert reading == (1, ["a"])  # only what is subscribed to
    assert cache.store("s", {"a": "A"}, cache.cached("s")[1]) is True
    assert cache.finish("s", 1, reading.uris) is False
    assert cache.progress() == [("s", 1, 3)]  # c: still being subscribed to
    cache.subscribed("s", 1, ["c"], asked=["c"])

    cache.invalidate("s", "a")  # read again in the background, no new subscription
    assert cache.take_subscribing("s", 10) is None
    assert cache.take_warming("s", 10) == (1, ["c", "a"])
    cache.finish("s", 1, ["c", "a"])
    cache.invalidate("s", "unlisted")  # ...every subscribed URI
    assert cache.take_warming("s", 10) == (1, ["a", "c"])
    cache.replace("s", 2, ["a", "b", "c"], subscribable=True)  # new session: all again
    assert cache.take_subscribing("s", 10) == (2, ["a", "b", "c"])


def subscribe_all(cache: UriCache, server: str) -> None:
    """The warm-up's first stage, every subscription accepted."""
    batch = cache.take_subscribing(server, 1000)
    assert batch is not None
    assert cache.subscribed(server, batch.generation, batch.uris, asked=batch.uris) is False


def test_a_reader_waits_for_the_warm_up_and_owes_an_announcement_when_it_could_not() -> None:
    cache = UriCache()
    cache.replace("s", 1, ["a", "b"], subscribable=True)
    cache.replace("idle", 1, ["z"])
    assert cache.wait_warm(["idle"], None, 0) is True  # nothing to wait for
    started = time.monotonic()
    assert cache.wait_warm(["s"], None, 0.2) is False and 0.2 <= time.monotonic() - started < 1.0
    subscribe_all(cache, "s")
    batch = cache.take_warming("s", 1)
    assert batch is not None and cache.finish("s", 1, batch.uris) is False  # b is still to read
    assert cache.wait_warm(["s"], "a", 0) is True  # a alone is done
    rest = cache.take_warming("s", 10)
    assert rest is not None
    due: list[bool] = []
    finisher = threading.Timer(0.1, lambda: due.append(cache.finish("s", 1, rest.uris)))
    finisher.start()
    assert cache.wait_warm(["s"], None, 5.0) is True  # woken by the finish, not by the timeout
    finisher.join()
    assert due == [True]  # the announcement owed since the first wait came due with it
    cache.replace("s", 1, ["a", "b", "c"], subscribable=True)
    assert cache.wait_warm(["s"], "c", 0) is False
    subscribe_all(cache, "s")
    last = cache.take_warming("s", 10)
    assert last is not None and cache.finish("s", 1, last.uris) is True
    assert cache.finish("s", 1, []) is False  # settled once


def test_after_an_idle_spell_a_reader_still_waits_for_a_new_document() -> None:
    """The warm-up's pace is measured within a busy spell: time spent idle since the last
    one must not make a reader think a one-document read cannot finish in time."""
    cache = UriCache()
    cache.replace("s", 1, ["a", "b"], subscribable=True)
    subscribe_all(cache, "s")
    for _ in range(2):
        batch, ticket = cache.take_warming("s", 1), cache.ticket("s")
        assert batch is not None and ticket is not None
        cache.store("s", {uri: uri.upper() for uri in batch.uris}, ticket)
        cache.finish("s", 1, batch.uris)
    threading.Event().wait(1.0)  # idle, longer than the reader below will wait
    cache.replace("s", 1, ["a", "b", "c"], subscribable=True)
    subscribe_all(cache, "s")
    new = cache.take_warming("s", 10)
    assert new is not None and new.uris == ["c"]
    finisher = threading.Timer(0.1, lambda: cache.finish("s", 1, new.uris))
    finisher.start()
    try:
        assert cache.wait_warm(["s"], None, 0.8) is True  # waited for c
    finally:
        finisher.join()


def test_once_halted_a_channel_drops_what_reads_give_unlogged(caplog: pytest.LogCaptureFixture) -> None:
    """A read under way when the Computer closes fails because of the close (its MCP
    servers stop, the skills' staging folder goes): no warning for it, nothing cached."""

    def read(server: str, uris: Any) -> list[Any]:
        return [BadRequestError(f"cannot stage it: {uri} is gone") for uri in uris]

    channel: ResourceChannel[Any] = ResourceChannel(
        "skills", "skill", events.UPDATE_SKILLS, read=read, check=lambda uri: None, value_of=lambda s, c: c
    )
    channel.listed("s", 1, [Resource(uri="skill://s/a", name="a")], subscribable=False)
    with caplog.at_level(logging.WARNING, logger="smcp_sync"):
        assert channel.entries(["s"]).entries == []
        assert "cannot stage it" in caplog.text  # while open, a failure is worth a warning
        caplog.clear()
        channel.halt()
        assert channel.entries(["s"]).entries == []
    assert caplog.records == []


def test_a_reader_does_not_wait_for_a_warm_up_too_slow_to_finish_in_time() -> None:
    cache = UriCache()
    cache.replace("s", 1, [f"u{i}" for i in range(100)], subscribable=True)
    subscribe_all(cache, "s")
    for _ in range(2):  # one URI each 0.2 s: the other 98 need about 20 s
        batch = cache.take_warming("s", 1)
        assert batch is not None
        time.sleep(0.2)
        cache.finish("s", 1, batch.uris)
    started = time.monotonic()
    assert cache.wait_warm(["s"], None, 10.0) is False  # answered without waiting its 10 s...
    assert time.monotonic() - started < 5.0
    rest = cache.take_warming("s", 100)
    assert rest is not None and cache.finish("s", 1, rest.uris) is True  # ...and owes the announcement


def test_a_reader_may_leave_changes_queued_while_it_waits_to_be_answered_as_before() -> None:
    cache = UriCache()
    cache.replace("s", 1, ["a", "b"], subscribable=True)
    subscribe_all(cache, "s")
    first = cache.take_warming("s", 10)
    assert first is not None and cache.finish("s", 1, first.uris) is False
    cache.invalidate("s", "a")  # to be read again: a reader now waits for it...
    answers: list[bool] = []
    reader = threading.Thread(target=lambda: answers.append(cache.wait_warm(["s"], None, 10.0, stale_ok=True)))
    reader.start()
    time.sleep(0.1)
    again = cache.take_warming("s", 10)
    assert again == (1, ["a"])
    cache.invalidate("s", "b")  # ...but not for what changes meanwhile (a stream would hold it up)
    cache.finish("s", 1, again.uris)
    reader.join(5.0)
    assert answers == [True]  # b: for the caller to answer as it was before the change
    last = cache.take_warming("s", 10)
    assert last == (1, ["b"]) and cache.finish("s", 1, last.uris) is False  # nothing owed


# -- the debouncer ------------------------------------------------------------------------


class Fired:
    def __init__(self) -> None:
        self.keys: list[Any] = []
        self.times: list[float] = []
        self._changed = threading.Condition()

    def __call__(self, key: Any) -> None:
        with self._changed:
            self.keys.append(key)
            self.times.append(time.monotonic())
            self._changed.notify_all()

    def wait(self, condition: Callable[[list[Any]], bool], timeout: float = 5.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: condition(self.keys), timeout), self.keys


@pytest.fixture
def debouncer(no_leaks: None) -> Any:
    made: list[Debouncer] = []

    def make(fire: Callable[[Any], None], quiet: float, max_delay: float) -> Debouncer:
        made.append(Debouncer("test", fire, quiet, max_delay))
        return made[-1]

    yield make
    for d in made:
        d.stop(5)


def test_a_burst_fires_once_per_key_after_the_quiet_time(debouncer: Any) -> None:
    fired = Fired()
    d = debouncer(fired, quiet=0.1, max_delay=5.0)
    started = time.monotonic()
    for _ in range(500):
        d.trigger("desktop")
    d.trigger("finder")
    fired.wait(lambda keys: len(keys) == 2)
    assert sorted(fired.keys) == ["desktop", "finder"] and min(fired.times) - started >= 0.1
    time.sleep(0.3)  # proving that nothing else fires takes a wait
    assert len(fired.keys) == 2


def test_a_steady_stream_still_fires_every_max_delay(debouncer: Any) -> None:
    fired = Fired()
    d = debouncer(fired, quiet=0.2, max_delay=0.3)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # never quiet for 0.2 s
        d.trigger("k")
        time.sleep(0.02)
    assert 2 <= len(fired.keys) <= 4


def test_a_failing_announcement_does_not_stop_the_thread(debouncer: Any, caplog: pytest.LogCaptureFixture) -> None:
    fired = Fired()

    def fire(key: str) -> None:
        if key == "bad":
            raise RuntimeError("boom")
        fired(key)

    d = debouncer(fire, quiet=0.0, max_delay=0.0)
    d.trigger("bad")
    d.trigger("good")
    fired.wait(lambda keys: keys == ["good"])
    assert "announcing a change of 'bad' failed" in caplog.text


def test_stopping_drops_what_is_pending_and_ignores_later_triggers(no_leaks: None) -> None:
    fired = Fired()
    d = Debouncer("test", fired, quiet=5.0, max_delay=5.0)
    d.trigger("k")
    d.stop(5)
    d.trigger("k")
    assert fired.keys == []
    with pytest.raises(ValueError, match="quiet <= max_delay"):
        Debouncer("bad", fired, quiet=1.0, max_delay=0.5)


# -- change detection against real MCP servers -------------------------------------------


@pytest.fixture
def watched(computer_factory: Any) -> Callable[..., tuple[Computer, Announcements, EventLog]]:
    """`watched(*configs)`: a started Computer whose announcements and server events are
    recorded from the start, once its initial announcements have settled."""

    def make(*configs: dict[str, Any]) -> tuple[Computer, Announcements, EventLog]:
        computer = computer_factory(*configs, start=False, channels=ChannelOptions(update_debounce=QUICK))
        announcements, server_events = Announcements(), EventLog()
        computer.add_update_listener(announcements)
        computer.add_listener(server_events)
        computer.start()
        announcements.settle()
        return computer, announcements, server_events

    return make


def test_enumeration_follows_every_page_and_subscribes_to_each_channel_uri(watched: Any, tmp_path: Path) -> None:
    windows = [window(str(i), priority=10 * i) for i in range(5)]
    computer, announced, _ = watched(resource_config("res", tmp_path / "s.json", [*windows, DOC], "--page-size", "2"))
    assert announced.events == [DESKTOP, FINDER] or announced.events == [FINDER, DESKTOP]
    assert [d.split("\n\n")[1] for d in computer.desktop()] == ["4 body", "3 body", "2 body", "1 body", "0 body"]
    assert [d.title for d in computer.finder().documents] == ["A"]
    # resource_server tells only subscribers about an update: hearing of one on the last
    # page (and of the document) proves the subscriptions
    computer.call_tool("touch", {"uri": "window://app/4?priority=40", "text": "changed"}, timeout=10)
    announced.wait_for(DESKTOP, 2)
    computer.call_tool("touch", {"uri": "dpe://docs/a"}, timeout=10)
    announced.wait_for(FINDER, 2)
    assert computer.desktop()[0] == "window://app/4?priority=40\n\nchanged"


def test_values_are_served_from_the_cache_until_the_server_says_they_changed(watched: Any, tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    computer, announced, _ = watched(resource_config("res", state, [window("w", "first")]))
    assert computer.desktop() == ["window://app/w\n\nfirst"]
    write_state(state, [window("w", "second")])  # changed behind the Computer's back
    assert computer.desktop() == ["window://app/w\n\nfirst"]  # not read again
    computer.call_tool("touch", {"uri": "window://app/w"}, timeout=10)
    announced.wait_for(DESKTOP, 2)
    assert computer.desktop() == ["window://app/w\n\nsecond"]


def test_a_server_without_subscribe_is_not_subscribed_to_and_always_read_afresh(
    watched: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "plain.json"
    with caplog.at_level(logging.WARNING):
        computer, announced, _ = watched(unsubscribable_config("plain", state, [window("w", "first")]))
        assert computer.servers.status("plain").capabilities.resources_subscribe is False
        assert computer.desktop() == ["window://app/w\n\nfirst"]
        write_state(state, [window("w", "second")])
        assert computer.desktop() == ["window://app/w\n\nsecond"]  # it would never say: read each time
    assert "subscription" not in caplog.text and announced.events == [DESKTOP]


def test_list_changed_is_announced_only_when_a_channels_uri_set_changed(watched: Any, tmp_path: Path) -> None:
    resources = [window("w"), DOC]
    computer, announced, server_events = watched(resource_config("res", tmp_path / "s.json", resources))
    baseline = len(announced.events)

    def set_resources(entries: list[dict[str, Any]]) -> None:
        heard = sum(e.kind == "resources_list_changed" for e in server_events.events)
        computer.call_tool("set_resources", {"resources": entries}, timeout=10)
        # listeners run after the change detector has handled the notification
        server_events.wait_for(lambda e: sum(x.kind == "resources_list_changed" for x in server_events.events) > heard)

    set_resources(list(reversed(resources)))  # same set
    assert announced.settle() == baseline

    set_resources([*resources, window("new")])  # the desktop's set changed, the finder's did not
    announced.wait_for(DESKTOP, 2)
    assert announced.settle() == baseline + 1 and announced.count(FINDER) == 1
    assert [d.split("\n\n")[0] for d in computer.desktop()] == ["window://app/w", "window://app/new"]

    set_resources([window("w")])  # both changed: one announcement each
    announced.wait_for(FINDER, 2)
    assert announced.settle() == baseline + 3 and announced.count(DESKTOP) == 3
    assert computer.finder().total_count == 0


def test_an_updated_uri_announces_the_channel_of_its_scheme_only(watched: Any, tmp_path: Path) -> None:
    entries = [window("w"), DOC, {"uri": "file:///notes", "name": "notes", "text": "n"}]
    computer, announced, server_events = watched(
        resource_config("res", tmp_path / "s.json", entries, "--always-notify-updated")
    )
    computer.call_tool("touch", {"uri": "dpe://docs/a"}, timeout=10)
    announced.wait_for(FINDER, 2)
    computer.call_tool("touch", {"uri": "file:///notes"}, timeout=10)  # no channel's scheme
    server_events.wait_for(lambda e: e.uri == "file:///notes")
    assert announced.settle() == 3 and announced.count(DESKTOP) == 1


def test_a_burst_of_500_updates_is_a_handful_of_announcements_and_the_last_state_wins(
    watched: Any, tmp_path: Path
) -> None:
    state = tmp_path / "s.json"
    computer, announced, server_events = watched(resource_config("res", state, [window("w", "before")]))
    assert computer.desktop() == ["window://app/w\n\nbefore"]
    write_state(state, [window("w", "after")])
    result = computer.call_tool("burst", {"n": 500, "uri": "window://app/w"}, timeout=30)
    assert result.text == "500 updated notification(s) sent"
    wait_until(lambda: sum(e.kind == "resource_updated" for e in server_events.events) == 500, 20, "500 updates")
    total = announced.settle()
    assert 2 <= total <= 6, announced.events  # the initial one plus a handful
    assert computer.desktop() == ["window://app/w\n\nafter"]


def test_a_crashed_server_leaves_the_channels_and_returns_to_them(watched: Any, tmp_path: Path) -> None:
    state = tmp_path / "crash.json"
    computer, announced, server_events = watched(
        resource_config("crashy", state, [window("c")]), resource_config("steady", tmp_path / "s.json", [DOC])
    )
    process_serving(state).kill()
    announced.wait_for(DESKTOP, 2)
    assert computer.desktop() == [] and computer.finder().total_count == 1
    server_events.wait_for(lambda e: e.server == "crashy" and e.kind == "connected" and e.status.generation == 2)
    announced.wait_for(DESKTOP, 3)
    assert computer.desktop() == ["window://app/c\n\nc body"]
    assert announced.count(FINDER) == 1  # the other channel never changed


def test_servers_added_and_removed_at_runtime_update_the_channels(watched: Any, tmp_path: Path) -> None:
    computer, announced, _ = watched(resource_config("first", tmp_path / "1.json", [window("one")]))
    computer.servers.add(resource_config("second", tmp_path / "2.json", [window("two", priority=5)]))
    announced.wait_for(DESKTOP, 2)
    assert [d.split("\n\n")[0] for d in computer.desktop()] == ["window://app/one", "window://app/two?priority=5"]
    computer.servers.remove("first")
    announced.wait_for(DESKTOP, 3)
    assert [d.split("\n\n")[0] for d in computer.desktop()] == ["window://app/two?priority=5"]
    computer.servers.stop("second")
    announced.wait_for(DESKTOP, 4)
    assert computer.desktop() == [] and announced.count(FINDER) == 0
