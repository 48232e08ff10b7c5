"""The Agent's own cache refreshes never hold up a notification callback or each other.

A silent Computer (it joins, then never answers) sits in the office next to a normal
one. The refresh timeout is raised far beyond the test's own waits, so anything that
waited on the silent Computer could not pass: the other Computer's notifications must
reach the callbacks, and its tools the cache, while the silent one's refresh is still
provably waiting. The `Refresher` itself is checked on plain jobs: lanes are
independent and a burst of requests on a busy lane coalesces into one more pass.
"""

from __future__ import annotations

import threading
from typing import Iterator

import pytest
from office_parts import joined_agent, serving

from smcp_sync.agent import client as agent_client
from smcp_sync.agent.refresher import Refresher
from smcp_sync.protocol import events
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.models import UpdateComputerConfigReq
from smcp_sync.server import SMCPServer

from .scripted_computer import ScriptedComputer, tool
from .silent_computer import SilentComputer

pytestmark = pytest.mark.timeout(60)

OFFICE = "office-refresh"
#: Longer than any wait of this module: a refresh that blocked others would fail it.
NEVER = 300.0


class Notes:
    """A notification callback that records what arrived, by computer."""

    def __init__(self) -> None:
        self.seen: list[UpdateComputerConfigReq] = []
        self.changed = threading.Condition()

    def __call__(self, notification: UpdateComputerConfigReq) -> None:
        with self.changed:
            self.seen.append(notification)
            self.changed.notify_all()

    def wait_for(self, computer: str, count: int = 1, timeout: float = 20.0) -> None:
        with self.changed:
            arrived = self.changed.wait_for(lambda: sum(n.computer == computer for n in self.seen) >= count, timeout)
            assert arrived, f"notifications seen: {self.seen}"


@pytest.fixture
def server(no_leaks: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[SMCPServer]:
    monkeypatch.setattr(agent_client, "REFRESH_TIMEOUT", NEVER)
    with serving(request_timeout=NEVER) as smcp:
        yield smcp


def test_a_silent_computer_delays_neither_callbacks_nor_other_refreshes(server: SMCPServer) -> None:
    mute = SilentComputer("mute").start(server.url, OFFICE)
    normal = ScriptedComputer("c1").start(server.url, OFFICE)
    try:
        with joined_agent("a1", server.url, OFFICE, timeout=5) as agent:
            updates = Notes()
            agent.on(events.UPDATE_TOOL_LIST_NOTIFICATION, updates)
            assert agent.tool_cache.wait_for("c1", timeout=20), "the join's refresh of c1 waited behind mute"
            mute.wait_for_requests(events.GET_TOOLS, 1)  # the join's refresh of mute: in flight for good

            mute.announce(events.UPDATE_TOOL_LIST)
            updates.wait_for("mute")  # its own callback does not wait for its refresh either
            old = agent.tool_cache.get("c1")
            normal.change_tools((tool("echo"), tool("added")))
            updates.wait_for("c1")
            fresh = agent.tool_cache.wait_for("c1", timeout=20, unlike=old)
            assert fresh is not None and [t.name for t in fresh] == ["echo", "added"]

            # mute's lane: the first request still unanswered, the notice merely pending on it
            assert mute.requests(events.GET_TOOLS) == 1 and "mute" not in agent.tool_cache
    finally:
        normal.close()
        mute.close()


def test_a_prefetch_a_computer_does_not_support_keeps_its_tools_cached(server: SMCPServer) -> None:
    """An official Computer has no Finder: the Server refuses get_finder for it at once
    (an extension it did not declare), which must not read as "the Computer left"."""
    agents: list = []
    cached_when_asked: list = []  # what the Agent had cached for it, as each get_tools came

    def tools(payload: dict) -> dict:
        cached_when_asked.append(agents[0].tool_cache.get("official") if agents else None)
        return {"tools": to_wire([tool("echo")]), "req_id": payload["req_id"]}

    official = SilentComputer("official", answering={events.GET_TOOLS: tools}).start(server.url, OFFICE)
    try:
        with joined_agent("a1", server.url, OFFICE, timeout=5, prefetch_finder=True) as agent:
            agents.append(agent)
            assert agent.tool_cache.wait_for("official", timeout=20)
            official.announce(events.UPDATE_FINDER)  # a refresh of the finder alone: refused
            official.announce(events.UPDATE_TOOL_LIST)  # then one of the tools, after it on the lane
            official.wait_for_requests(events.GET_TOOLS, 2)
            assert [t.name for t in cached_when_asked[1]] == ["echo"]  # not forgotten meanwhile
            assert official.requests(events.GET_FINDER) == 0 and agent.finder_cache.get("official") is None
    finally:
        official.close()


def test_a_lane_runs_one_pass_at_a_time_and_coalesces_requests_meanwhile() -> None:
    refresher = Refresher("test-refresh")
    refresher.start()
    runs: list[str] = []
    started, release, other_done, ended = (threading.Event() for _ in range(4))

    def first() -> None:
        runs.append("first")
        started.set()
        release.wait(20)

    try:
        refresher.request("slow", {"tools": first})
        assert started.wait(20)
        for _ in range(3):  # notices arriving while the lane is busy
            refresher.request("slow", {"tools": lambda: runs.append("again")})
        refresher.request("other", {"tools": other_done.set})
        assert other_done.wait(20), "another lane waited behind the busy one"
        release.set()
        refresher.request("slow", {"end": ended.set})  # runs after whatever the lane still has
        assert ended.wait(20)
        assert runs == ["first", "again"]
    finally:
        release.set()
        refresher.close(5)
