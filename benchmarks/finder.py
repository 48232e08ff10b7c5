"""The Finder under load: a big catalogue (cold, warm, filtered, paged), its floor and
memory, a storm of ``resources/updated`` notices, and single-document updates while an
Agent queries.

One stack serves all: SMCPServer (process) → Computer (process) hosting `servers`
`doc_server.py` MCP servers of `documents` documents each → Agent (this process). The
first server also offers the ``storm`` and ``churn`` tools.

* catalogue: first the floor (`finder_floor`: the same Level 1 reads straight through the
  mcp SDK, before the stack starts), and the RSS of a Computer joined with the same
  servers holding no documents (the baseline of RSS per cached document). Then the first
  `get_finder` after the Computer joined (cold: the Computer is still reading the
  summaries in the background and answers, within its `cold_wait`, with those read so
  far; its `total_count` is kept as ``first_answer``), how long until the catalogue holds
  every document (refreshing on each ``notify:update_finder``, or every second), the
  Computer's RSS then, and warm `get_finder` calls: first page, with a keyword that
  matches 1 in 50, with a file type that matches 1 in 4, and the last page.
* storm: ``storm`` sends `storm_count` ``resources/updated`` for one document within
  `storm_seconds` and renames it just before the last. Counted: the
  ``notify:update_finder`` the Agent receives (the Computer should coalesce them), and
  the time from the last notice to the first `get_finder` that shows the new title.
* updates: ``churn`` renames `update_rate` documents a second, one notice each, for
  `update_seconds`, while this thread sends `get_finder` (first page) one after the
  other; then how many renamed documents the catalogue shows, and when all of them.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from . import finder_floor, loadgen
from .doc_server import FILE_TYPES, KEYWORD_EVERY
from .processes import Peers

DOC_SERVER = Path(__file__).resolve().parent / "doc_server.py"
KEYWORD = "quarterly"  # doc_server.py: every KEYWORD_EVERY-th document
FILE_TYPE = FILE_TYPES[1]  # doc_server.py: documents in turn, so 1 in len(FILE_TYPES)
PAGE = 20  # the Agent's default limit
#: Seconds the catalogue may take to hold every document (at least; more for a big one).
COMPLETE_TIMEOUT = 300.0
COMPLETE_SECONDS_PER_DOCUMENT = 0.01
#: Seconds after the storm within which the new title must be visible.
VISIBLE_TIMEOUT = 60.0
#: Notifications count as over when none came for this long.
QUIET_AFTER_STORM = 2.0
REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True)
class FinderPlan:
    servers: int = 10
    documents: int = 1000
    warm_calls: int = 300
    storm_count: int = 1000
    storm_seconds: float = 1.0
    update_rate: float = 100.0
    update_seconds: float = 10.0

    @property
    def total(self) -> int:
        return self.servers * self.documents

    @property
    def complete_timeout(self) -> float:
        return max(COMPLETE_TIMEOUT, self.total * COMPLETE_SECONDS_PER_DOCUMENT)

    @property
    def updates(self) -> int:
        return max(1, round(self.update_rate * self.update_seconds))

    def args(self, index: int, documents: int | None = None) -> list[str]:
        """The `doc_server.py` argv (after the interpreter) of server `index`."""
        count = self.documents if documents is None else documents
        args = [str(DOC_SERVER), "--host-id", f"lib{index}.bench", "--documents", str(count)]
        return args + (["--tools"] if index == 0 else [])


def doc_server_configs(plan: FinderPlan, documents: int | None = None) -> list[dict[str, Any]]:
    """The Computer's MCP server configs; `documents` per server (default: the plan's)."""
    return [
        {
            "name": f"docs{index}",
            "type": "stdio",
            "server_parameters": {"command": sys.executable, "args": plan.args(index, documents)},
            "default_tool_meta": {"auto_apply": True},
        }
        for index in range(plan.servers)
    ]


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
    deadline = joined_at + plan.complete_timeout
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
    raise RuntimeError(f"the catalogue holds {total} of {plan.total} documents after {plan.complete_timeout:g} s")


def _warm(agent: Any, computer: str, plan: FinderPlan) -> dict[str, Any]:
    """Sequential `get_finder` on the complete catalogue: first page, one keyword, one
    file type, the last page; each answer checked."""

    def query(expected: int, page: int, **options: Any) -> Callable[[], None]:
        def call() -> None:
            found = agent.get_finder(computer, timeout=REQUEST_TIMEOUT, **options)
            if (found.total_count, len(found.documents)) != (expected, page):
                raise RuntimeError(f"{options}: {found.total_count} documents, {len(found.documents)} on the page")

        return call

    keyword = plan.total // KEYWORD_EVERY
    typed = plan.servers * len(range(1, plan.documents, len(FILE_TYPES)))
    far = max(0, plan.total - PAGE)
    queries = {
        "warm": query(plan.total, min(PAGE, plan.total)),
        "keywords": query(keyword, min(PAGE, keyword), keywords=[KEYWORD]),
        "file_type": query(typed, min(PAGE, typed), file_type=FILE_TYPE),
        "far_offset": query(plan.total, plan.total - far, offset=far),
    }
    results: dict[str, Any] = {"far_offset": far}
    for name, call in queries.items():
        results[name] = loadgen.sequential(call, plan.warm_calls, plan.complete_timeout)
        if results[name]["errors"]:
            raise RuntimeError(f"warm get_finder ({name}) failed: {results[name]['first_error']}")
    return results


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def _empty_rss_mb(url: str, plan: FinderPlan) -> float:
    """RSS of a Computer joined with the same MCP servers, each holding no document: what
    the catalogue's Computer weighs before it caches anything."""
    with Peers() as peers:
        ready = peers.computer(url, f"empty-{uuid.uuid4().hex[:8]}", "empty-c", doc_server_configs(plan, 0))
        return _rss_mb(ready["pid"])


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


def _updates(agent: Any, computer: str, plan: FinderPlan, notices: Notices) -> dict[str, Any]:
    """``churn`` in a thread; `get_finder` (first page) here, one after the other, until it
    answers; then until the catalogue shows every renamed document (or `VISIBLE_TIMEOUT`)."""
    tag = f"churn{uuid.uuid4().hex[:8]}"
    renamed = min(plan.updates, plan.documents)
    before = notices.count()
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def churn() -> None:
        params = {"count": plan.updates, "seconds": plan.update_seconds, "tag": tag}
        try:
            outcome["result"] = agent.call_tool(computer, "churn", params, timeout=plan.update_seconds + REQUEST_TIMEOUT)
        except Exception as exc:
            outcome["error"] = exc
        finally:
            outcome["answered_at"] = time.monotonic()
            done.set()

    thread = threading.Thread(target=churn, name="bench-churn", daemon=True)
    latencies: list[float] = []
    errors: list[str] = []
    started = time.monotonic()
    thread.start()
    while not done.is_set():
        began = time.perf_counter()
        try:
            total = agent.get_finder(computer, timeout=REQUEST_TIMEOUT).total_count
            if total != plan.total:
                raise RuntimeError(f"total_count {total} of {plan.total}")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        latencies.append(time.perf_counter() - began)
    thread.join(REQUEST_TIMEOUT)
    if "error" in outcome or outcome["result"].is_error:
        raise RuntimeError(f"churn tool failed: {outcome.get('error') or outcome['result'].text}")
    answered_at = outcome["answered_at"]
    seen, visible_at = 0, None
    deadline = answered_at + VISIBLE_TIMEOUT
    while time.monotonic() < deadline:
        arrived = notices.count()
        seen = agent.get_finder(computer, keywords=[tag], timeout=REQUEST_TIMEOUT).total_count
        if seen == renamed:
            visible_at = time.monotonic()
            break
        notices.wait_beyond(arrived, deadline - time.monotonic())
    return {
        "updates_sent": plan.updates,
        "updates_s": answered_at - started,
        "documents_renamed": renamed,
        "documents_seen": seen,
        "update_finder_received": notices.count() - before,
        "all_visible_after_end_s": visible_at - answered_at if visible_at is not None else None,
        "queries": {**loadgen.summarize(latencies), "errors": len(errors), "first_errors": errors[:5]},
    }


def run(plan: FinderPlan, *, catalogue: bool, storm: bool, updates: bool = False) -> dict[str, Any]:
    from smcp_sync.connection.session import ReconnectPolicy

    from smcp_sync.agent import Agent
    from smcp_sync.protocol import events

    office = f"finder-{uuid.uuid4().hex[:8]}"
    results: dict[str, Any] = {"servers": plan.servers, "documents_per_server": plan.documents}
    if catalogue:  # before any stack: nothing else of this benchmark runs meanwhile
        results["floor"] = finder_floor.run([plan.args(index) for index in range(plan.servers)], sys.executable)
    with Peers() as peers, Agent("finder-a", reconnect=ReconnectPolicy(enabled=False)) as agent:
        url = peers.start("smcp-server")["url"]
        if catalogue:
            results["empty_rss_mb"] = _empty_rss_mb(url, plan)
        agent.connect(url, timeout=10)
        agent.join_office(office, timeout=10)
        notices = Notices(agent, events.UPDATE_FINDER_NOTIFICATION)
        spawned = time.monotonic()
        ready = peers.computer(url, office, "docs-c", doc_server_configs(plan), timeout=plan.complete_timeout)
        joined_at = time.monotonic()
        results["computer_ready_s"] = joined_at - spawned
        filled = _fill(agent, "docs-c", plan, joined_at, notices)  # the other parts need a full catalogue too
        if catalogue:
            results["catalogue"] = {**filled, "complete_rss_mb": _rss_mb(ready["pid"]), **_warm(agent, "docs-c", plan)}
        if storm:
            results["storm"] = _storm(agent, "docs-c", plan, notices)
        if updates:
            results["updates"] = _updates(agent, "docs-c", plan, notices)
    return results
