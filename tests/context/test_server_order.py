"""The one server-order rule both organisers share (spec/desktop.md + spec/finder.md step 2)."""

from __future__ import annotations

import collections
from types import SimpleNamespace

import pytest

from smcp_sync.context import CallRecord, order_servers

pytestmark = pytest.mark.timeout(30)


def calls(*servers: str) -> list[CallRecord]:
    """A tool-call history: all the organisers read of a record is its `server`."""
    return [SimpleNamespace(server=s) for s in servers]


def test_without_history_servers_are_in_name_order():
    assert order_servers(["b", "c", "a"], []) == ["a", "b", "c"]


def test_most_recently_called_server_comes_first_and_duplicates_collapse():
    assert order_servers(["a", "b", "c"], calls("a", "b", "a", "c")) == ["c", "a", "b"]


def test_servers_never_called_follow_in_name_order():
    assert order_servers(["zeta", "alpha", "mid", "used"], calls("used")) == ["used", "alpha", "mid", "zeta"]


def test_history_servers_without_content_are_left_out():
    assert order_servers(["a", "b"], calls("gone", "b", "gone")) == ["b", "a"]


def test_duplicate_input_servers_appear_once():
    assert order_servers(["b", "a", "b", "a"], calls("b")) == ["b", "a"]


def test_a_bounded_deque_history_works():
    history = collections.deque(calls("a", "b", "c", "a"), maxlen=2)  # keeps c, a
    assert order_servers(["a", "b", "c"], history) == ["a", "c", "b"]


def test_any_record_with_a_server_attribute_will_do():
    richer = collections.namedtuple("Richer", "req_id server tool ok")
    history = [richer("r1", "b", "t", True), richer("r2", "a", "t", False)]
    assert order_servers(["a", "b", "c"], history) == ["a", "b", "c"]
    assert order_servers(["a", "b", "c"], history[:1]) == ["b", "a", "c"]
