"""The background warm-up of the Finder catalogue (resource channel mechanism) against a
real MCP server whose subscriptions and reads are slow: `start()` returns once the
documents are listed, a cold `finder()` answers within `ServerPolicy.cold_wait` with what
is read and says it is partial, `server:update_finder` follows once the rest is read, a
change racing a read leaves no stale summary, and closing stops the warm-up."""

from __future__ import annotations

import threading
import time
from typing import Any

import attrs
import pytest

from smcp_sync.computer import Computer
from smcp_sync.protocol import events
from smcp_sync.computer import ChannelOptions

from ..helpers import FAST, wait_until
from ..resource_helpers import QUICK, Announcements, slow_catalogue_config

pytestmark = pytest.mark.timeout(30)

FINDER = events.UPDATE_FINDER
COLD_WAIT = 0.5
#: 160 documents, 16 requests in flight, 0.1 s per subscription and 0.2 s per read: the
#: catalogue takes at least 3 s to read, whatever the machine.
DOCUMENTS, SUBSCRIBE_DELAY, READ_DELAY = 160, 0.1, 0.2


def started(
    computer_factory: Any, *configs: dict[str, Any], cold_wait: float = COLD_WAIT
) -> tuple[Computer, Announcements]:
    policy = attrs.evolve(FAST, cold_wait=cold_wait)
    computer = computer_factory(*configs, start=False, policy=policy, channels=ChannelOptions(update_debounce=QUICK))
    announced = Announcements()
    computer.add_update_listener(announced)
    computer.start()
    return computer, announced


def warming(computer: Computer) -> list[str]:
    """What `diagnostics()` says of resources still being read."""
    return [d for d in computer.diagnostics() if "still being read" in d]


def usage(computer: Computer, uri: str) -> tuple[int, int]:
    """(reads of `uri`, URIs subscribed to) as the MCP server counts them."""
    reads, subscriptions = computer.call_tool("reads", {"uri": uri}, timeout=10).text.split()
    return int(reads), int(subscriptions)


def test_a_cold_catalogue_answers_in_time_with_what_is_read_then_announces_the_rest(computer_factory: Any) -> None:
    config = slow_catalogue_config("slow", "cold.docs", DOCUMENTS, READ_DELAY, SUBSCRIBE_DELAY)
    computer, announced = started(computer_factory, config)
    # start() waited for the listing, not for 160 subscriptions (at least 1 s of them)
    assert usage(computer, "dpe://cold.docs/doc-000")[1] < DOCUMENTS

    began = time.monotonic()
    cold = computer.finder(limit=100)
    assert time.monotonic() - began < COLD_WAIT + 1.0
    assert cold.complete is False and cold.total_count < DOCUMENTS
    assert len(cold.documents) == min(cold.total_count, 100)
    assert computer.finder(keywords=["Document"]).total_count < DOCUMENTS  # what is read, filtered
    [progress] = warming(computer)
    assert "MCP server 'slow': " in progress and f" of {DOCUMENTS} dpe:// resources" in progress

    announced.wait_for(FINDER, 2, timeout=20)  # the listing, then the owed announcement
    warm = computer.finder()
    assert (warm.complete, warm.total_count) == (True, DOCUMENTS)
    assert [d.doc_ref for d in warm.documents[:2]] == ["doc-159", "doc-158"]  # newest first
    assert warming(computer) == []
    assert usage(computer, "dpe://cold.docs/doc-000") == (1, DOCUMENTS)  # each read once, in the background
    assert announced.settle() == 2


def test_a_warm_catalogue_owes_nothing(computer_factory: Any) -> None:
    computer, announced = started(computer_factory, slow_catalogue_config("quick", "warm.docs", 20, 0.0))
    wait_until(lambda: not warming(computer), what="the warm-up is done")
    page = computer.finder()
    assert (page.complete, page.total_count) == (True, 20)
    assert announced.settle() == 1  # the listing only


def test_a_change_racing_a_read_during_the_warm_up_leaves_no_stale_summary(computer_factory: Any) -> None:
    config = slow_catalogue_config("slow", "race.docs", 48, 0.5)
    computer, _ = started(computer_factory, config, cold_wait=10.0)  # here: wait for the warm-up
    uri = "dpe://race.docs/doc-047"
    # renamed (and resources/updated sent) while the warm-up's read of it, which took the
    # old title, is still under way
    assert computer.call_tool("rename", {"uri": uri, "title": "Renamed"}, timeout=10).text == "renamed after 1 read(s)"
    page = computer.finder(keywords=["Renamed", "Document 047"])
    assert page.complete and [d.title for d in page.documents] == ["Renamed"]
    assert usage(computer, uri)[0] == 2  # read again after the notice


def test_closing_stops_the_warm_up_under_way(computer_factory: Any) -> None:
    # 800 documents at 0.5 s a read: 25 s of warm-up, cut short
    computer, _ = started(computer_factory, slow_catalogue_config("slow", "big.docs", 800, 0.5))
    assert any(t.name == "smcp-computer-warm[test-computer]" for t in threading.enumerate())
    assert computer.finder().complete is False
    began = time.monotonic()
    computer.close()
    assert time.monotonic() - began < 8.0
    assert not any(t.name.startswith(("smcp-computer-warm", "smcp-computer-subscribe")) for t in threading.enumerate())
    # and no_leaks (computer_factory) checks every thread and child process is gone
