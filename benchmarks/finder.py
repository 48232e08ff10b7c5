"""The Finder under load: a big catalogue (cold, warm, with keywords) and a storm of
``resources/updated`` notices.

One stack serves both: SMCPServer (process) → Computer (process) hosting `servers`
`doc_server.py` MCP servers of `documents` documents each → Agent (this process). The
first server also offers the ``storm`` tool.

* catalogue: the first `get_finder` after the Computer joined (cold: the Computer is
  still reading the summaries in the background and answers, within its `cold_wait`,
  with those read so far; its `total_count` is kept as ``first_answer``), how long until
  the catalogue holds every document (refreshing on each ``notify:update_finder``, or
  every second), then warm `get_finder` calls (first page), and with a keyword that
  matches 1 in 50.
* storm: ``storm`` sends `storm_count` ``resources/updated`` for one document within
  `storm_seconds` and renames it just before the last. Counted: the
  ``notify:update_finder`` the Agent receives (the Computer should coalesce them), and
  the time from the last notice to the first `get_finder` that shows the new title.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import loadgen
from .processes import Peers

DOC_SERVER = Path(__file__).resolve().parent / "doc_server.py"
KEYWORD = "quarterly"  # doc_server.py: every 50th document
KEYWORD_EVERY = 50
#: Seconds the catalogue may take to hold every document.
COMPLETE_TIMEOUT = 300.0
#: Seconds after the storm within which the new title must be visible.
VISIBLE_TIMEOUT = 60.0
#: Notifications count as over when none came for this long.
QUIET_AFTER_STORM = 2.0
REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True)
class FinderPlan:
    servers: int = 10
    documents: int = 1000
    warm_calls: int = 50
    storm_count: int = 1000
    storm_seconds: float = 1.0

    @property
    def total(self) -> int:
        return self.servers * self.documents


def doc_server_configs(plan: FinderPlan) -> list[dict[str, Any]]:
    configs = []
    for index in range(plan.servers):
        args = [str(DOC_SERVER), "--host-id", f"lib{index}.bench", "--documents", str(plan.documents)]
        configs.append(
            {
                "name": f"docs{index}",
                "type": "stdio",
                "server_parameters": {
                    "command": sys.executable,
                    "args": args + (["--storm-tool"] if index == 0 else []),
                },
                "default_tool_meta": {"auto_apply": True},
            }
        )
    return configs


class Notices:
    """Arrival times of one notification event at the Agent."""

    def __init__(self, agent: Any, event: str) -> None:
        self.times: list[float] = []
        self.arrived = threading.Condition()
        agent.on(event, self._record)

    def _record(self, notification: Any) -> None:
        with self.arrived:
            self.times.append(time.monotonic())
            self.arrived.notify_all()

    def count(self) -> int:
        with self.arrived:
            return len(self.times)

    def since(self, index: int) -> list[float]:
        with self.arrived:
            return self.times[index:]

    def wait_beyond(self, seen: int, timeout: float) -> bool:
        """Wait until more than `seen` have arrived."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.times) > seen, timeout)

    def wait_quiet(self, since: float, quiet: float, timeout: float) -> None:
        """Until none arrived for `quiet` seconds, counting from `since` at the earliest
        (at most `timeout`)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while time.monotonic() < deadline:
                last = max(self.times[-1], since) if self.times else since
                idle_for = time.monotonic() - last
                if idle_for >= quiet:
                    return
                self.arrived.wait(min(quiet - idle_for, deadline - time.monotonic()))


def _fill(agent: Any, computer: str, plan: FinderPlan, joined_at: float, notices: Notices) -> dict[str, Any]:
    """The first `get_finder` after the join, then more (after each change notice, or
    every second) until the catalogue holds every document. A request the Server times
    out (408: the Computer was still reading) is counted and retried."""
    from smcp_sync.protocol.errors import SMCPTimeoutError

    first: dict[str, Any] = {}
    timeouts = 0
    total = 0
    deadline = joined_at + COMPLETE_TIMEOUT
    while time.monotonic() < deadline:
        seen = notices.count()
        started = time.perf_counter()
        try:
            total = agent.get_finder(computer, timeout=REQUEST_TIMEOUT).total_count
            outcome: Any = total
        except SMCPTimeoutError as exc:
            timeouts += 1
            outcome = f"[{exc.code}] {exc.message}"
        first = first or {"first_ms": (time.perf_counter() - started) * 1e3, "first_answer": outcome}
        if total == plan.total:
            return {"documents": plan.total, **first, "timeouts": timeouts, "complete_s": time.monotonic() - joined_at}
        notices.wait_beyond(seen, min(1.0, deadline - time.monotonic()))
    raise RuntimeError(f"the catalogue holds {total} of {plan.total} documents after {COMPLETE_TIMEOUT:g} s")


def _warm(agent: Any, computer: str, plan: FinderPlan) -> dict[str, Any]:
    """Sequential `get_finder` on the complete catalogue: first page, then one keyword."""

    def warm() -> None:
        if agent.get_finder(computer, timeout=REQUEST_TIMEOUT).total_count != plan.total:
            raise RuntimeError("catalogue incomplete")

    def keyword() -> None:
        found = agent.get_finder(computer, keywords=[KEYWORD], timeout=REQUEST_TIMEOUT).total_count
        if found != plan.total // KEYWORD_EVERY:
            raise RuntimeError(f"{found} documents match {KEYWORD!r}")

    return {
        "warm": loadgen.sequential(warm, plan.warm_calls, COMPLETE_TIMEOUT),
        "keywords": loadgen.sequential(keyword, plan.warm_calls, COMPLETE_TIMEOUT),
    }


def _storm(agent: Any, computer: str, plan: FinderPlan, notices: Notices) -> dict[str, Any]:
    title = f"storm-final-{uuid.uuid4().hex[:8]}"
    uri = "dpe://lib0.bench/doc-0000"
    before = notices.count()
    started = time.monotonic()
    params = {"uri": uri, "count": plan.storm_count, "seconds": plan.storm_seconds, "final_title": title}
    result = agent.call_tool(computer, "storm", params, timeout=plan.storm_seconds + REQUEST_TIMEOUT)
    if result.is_error:
        raise RuntimeError(f"storm tool failed: {result.text}")
    sent_at = time.monotonic()  # the tool answers after sending its last notice, which may arrive first
    visible_at = None
    deadline = sent_at + VISIBLE_TIMEOUT
    while time.monotonic() < deadline:
        seen = notices.count()
        if agent.get_finder(computer, keywords=[title], timeout=REQUEST_TIMEOUT).total_count == 1:
            visible_at = time.monotonic()
            break
        notices.wait_beyond(seen, deadline - time.monotonic())
    notices.wait_quiet(sent_at, QUIET_AFTER_STORM, VISIBLE_TIMEOUT)
    arrivals = notices.since(before)
    return {
        "notices_sent": plan.storm_count,
        "storm_s": sent_at - started,
        "update_finder_received": len(arrivals),
        "first_update_after_s": arrivals[0] - started if arrivals else None,
        "last_update_after_end_s": arrivals[-1] - sent_at if arrivals else None,
        "visible_after_end_s": visible_at - sent_at if visible_at is not None else None,
    }


def run(plan: FinderPlan, *, catalogue: bool, storm: bool) -> dict[str, Any]:
    from smcp_sync.agent import Agent
    from smcp_sync.connection import ReconnectPolicy
    from smcp_sync.protocol import events

    office = f"finder-{uuid.uuid4().hex[:8]}"
    results: dict[str, Any] = {"servers": plan.servers, "documents_per_server": plan.documents}
    with Peers() as peers, Agent("finder-a", reconnect=ReconnectPolicy(enabled=False)) as agent:
        url = peers.start("smcp-server")["url"]
        agent.connect(url, timeout=10)
        agent.join_office(office, timeout=10)
        notices = Notices(agent, events.UPDATE_FINDER_NOTIFICATION)
        spawned = time.monotonic()
        peers.computer(url, office, "docs-c", doc_server_configs(plan), timeout=COMPLETE_TIMEOUT)
        joined_at = time.monotonic()
        results["computer_ready_s"] = joined_at - spawned
        filled = _fill(agent, "docs-c", plan, joined_at, notices)  # the storm needs a full catalogue too
        if catalogue:
            results["catalogue"] = {**filled, **_warm(agent, "docs-c", plan)}
        if storm:
            results["storm"] = _storm(agent, "docs-c", plan, notices)
    return results
