"""Turn measured results into Markdown tables (stdout and README) and a machine note.

Every table is ``### title`` followed by a GitHub Markdown table, so the printed report
can be pasted into `benchmarks/README.md` as is, and the smoke test can parse it back.
Numbers only in numeric columns; a value that was not measured is ``n/a``.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
from dataclasses import dataclass, field
from typing import Any

import psutil

from .echo import REPO
from .loadgen import percentile

PATH_LABELS = {
    "mcp_direct": "floor: MCP ClientSession → stdio echo (asyncio)",
    "raw_socketio": "floor: raw python-socketio call (websocket)",
    "local_computer": "floor: Computer.call_tool, no Socket.IO",
    "smcp_sync": "smcp_sync: Agent → Server → Computer → MCP",
    "official": "official 0.1.6: Agent → Server → Computer → MCP",
    "official_042": "official 0.4.2: Agent → Server → Computer → MCP",
    "redis_same_node": "scale-out, same node: Agent → node A → Computer → MCP",
    "redis_cross_node": "scale-out, across nodes: Agent → node A → Redis → node B → Computer → MCP",
    "ops_off": "smcp_sync, Server without metrics and audit trail",
    "ops_on": "smcp_sync, Server with metrics and audit trail (JSON lines)",
}
PACKAGES = ("python-socketio", "python-engineio", "simple-websocket", "websocket-client", "werkzeug", "mcp")
NA = "n/a"


@dataclass
class Table:
    """A titled table; `add` refuses a row of the wrong width."""

    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def add(self, *cells: Any) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", _row(self.columns), _row(["---"] * len(self.columns))]
        lines += [_row([_cell(value) for value in row]) for row in self.rows]
        return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _cell(value: Any) -> str:
    """Floats to 3 significant figures or so (the noise is larger than that)."""
    if value is None:
        return NA
    if not isinstance(value, float):
        return str(value)
    magnitude = abs(value)
    return f"{value:.0f}" if magnitude >= 100 else f"{value:.1f}" if magnitude >= 10 else f"{value:.2f}"


# -- round trips ------------------------------------------------------------------------


def paths_table(summaries: dict[str, dict[str, Any]], levels: tuple[int, ...]) -> Table:
    table = Table(
        "Echo tool call round trip (medians over rounds)",
        ["path", "rounds", "calls", "errors", "p50 ms", "p99 ms", "seq calls/s"]
        + [f"{n} callers calls/s" for n in levels]
        + [f"p99 ms @{max(levels)}", "CPU ms/call"],
    )
    for key, label in PATH_LABELS.items():
        figures = summaries.get(key)
        if figures is None:
            continue
        table.add(
            label,
            figures["rounds"],
            figures["calls"],
            figures["errors"],
            figures["p50_ms"],
            figures["p99_ms"],
            figures["calls_per_s"],
            *(level["calls_per_s"] for level in figures["levels"]),
            figures["levels"][-1]["p99_ms"],
            figures["cpu_ms_per_call"],
        )
    return table


def ratios_table(rows: list[tuple[str, float | None, str]]) -> Table:
    table = Table("Ratios (paired per round, median)", ["comparison", "ratio", "reading"])
    for row in rows:
        table.add(*row)
    return table


def registry_table(rows: list[dict[str, Any]]) -> Table:
    columns = {"operation": "operation", "calls": "calls", "ops/s": "ops_per_s", "µs/call": "us_per_call"}
    return _rows_table("Scale-out: Redis office registry operations (one thread)", columns, rows)


def failover_table(seconds: list[float]) -> Table:
    return _failovers("Scale-out: failover, SIGKILL of a node → Agent back in office and answered", "kills", seconds)


def recovery_table(rows: list[dict[str, Any]]) -> Table:
    columns = {"members": "members", "written back after FLUSHALL s": "write_back_s", "s per 1,000": "per_1000_s", "purged s": "purge_s"}
    return _rows_table("Scale-out: recovery of one node's members", columns, rows)


def _rows_table(title: str, columns: dict[str, str], rows: list[dict[str, Any]]) -> Table:
    """A table of `rows`, one column per heading of `columns` showing that key of each row."""
    table = Table(title, list(columns))
    for row in rows:
        table.add(*(row[key] for key in columns.values()))
    return table


def sentinel_table(seconds: list[float]) -> Table:
    return _failovers("Scale-out: Sentinel failover, SIGKILL of the master → office whole and routed", "failovers", seconds)


def _failovers(title: str, what: str, seconds: list[float]) -> Table:
    ordered = sorted(seconds)
    table = Table(title, [what, "p50 s", "p99 s", "max s"])
    table.add(len(ordered), percentile(ordered, 50), percentile(ordered, 99), ordered[-1])
    return table


# -- finder -------------------------------------------------------------------------------


WARM_QUERIES = {
    "warm": "warm get_finder (first page)",
    "keywords": "warm get_finder, 1 keyword",
    "file_type": "warm get_finder, file_type",
    "far_offset": "warm get_finder, last page",
}


def finder_tables(result: dict[str, Any]) -> list[Table]:
    title = f"{result['servers']} MCP servers × {result['documents_per_server']} documents"
    tables = []
    catalogue = result.get("catalogue")
    if catalogue is not None:
        floor = result["floor"]
        table = Table(f"Finder: {title}", ["measure", "value", "unit"])
        table.add("Computer start + join", result["computer_ready_s"], "s")
        table.add("first get_finder after the join (cold)", catalogue["first_ms"], "ms")
        table.add(
            "requests the Server timed out (408) before the catalogue was complete", catalogue["timeouts"], "requests"
        )
        table.add("catalogue complete, after the join", catalogue["complete_s"], "s")
        table.add(f"floor: {floor['reads']} Level 1 reads, ClientSession, {floor['concurrency']} in flight", floor["floor_s"], "s")
        table.add("floor: the MCP servers' CPU", floor["servers_cpu_s"], "s")
        table.add("floor: the client's CPU", floor["client_cpu_s"], "s")
        table.add("catalogue complete / floor", catalogue["complete_s"] / floor["floor_s"], "ratio")
        table.add("floor with subscriptions (subscribe, then read, each document)", floor["subscribed_floor_s"], "s")
        table.add("floor with subscriptions: the MCP servers' CPU", floor["subscribed_servers_cpu_s"], "s")
        table.add("floor with subscriptions: the client's CPU", floor["subscribed_client_cpu_s"], "s")
        table.add(
            "catalogue complete / floor with subscriptions", catalogue["complete_s"] / floor["subscribed_floor_s"], "ratio"
        )
        table.add("Computer RSS, joined, every MCP server empty", result["empty_rss_mb"], "MB")
        table.add("Computer RSS, catalogue complete", catalogue["complete_rss_mb"], "MB")
        per_document = (catalogue["complete_rss_mb"] - result["empty_rss_mb"]) * 1024 / catalogue["documents"]
        table.add("Computer RSS per cached document", per_document, "KB")
        for key, label in WARM_QUERIES.items():
            table.add(f"{label} p50", catalogue[key]["p50_ms"], "ms")
            table.add(f"{label} p99", catalogue[key]["p99_ms"], "ms")
        tables.append(table)
    storm = result.get("storm")
    if storm is not None:
        table = Table(f"Notification storm on one document ({title})", ["measure", "value", "unit"])
        table.add("resources/updated sent by the MCP server", storm["notices_sent"], "notices")
        table.add("storm duration", storm["storm_s"], "s")
        table.add("notify:update_finder received by the Agent", storm["update_finder_received"], "notifications")
        table.add("first notify:update_finder, after the storm began", storm["first_update_after_s"], "s")
        table.add("last notify:update_finder, after the storm tool answered", storm["last_update_after_end_s"], "s")
        table.add("final state visible to get_finder, after the storm tool answered", storm["visible_after_end_s"], "s")
        tables.append(table)
    updates = result.get("updates")
    if updates is not None:
        table = Table(f"Single-document updates while an Agent queries ({title})", ["measure", "value", "unit"])
        table.add("updates made by the MCP server (one resources/updated each)", updates["updates_sent"], "updates")
        table.add("updates took, until the churn tool answered", updates["updates_s"], "s")
        table.add("get_finder (first page) during the updates", updates["queries"]["n"], "queries")
        table.add("get_finder errors during the updates", updates["queries"]["errors"], "queries")
        table.add("get_finder during the updates p50", updates["queries"]["p50_ms"], "ms")
        table.add("get_finder during the updates p99", updates["queries"]["p99_ms"], "ms")
        table.add("notify:update_finder received by the Agent", updates["update_finder_received"], "notifications")
        table.add("documents renamed", updates["documents_renamed"], "documents")
        table.add("renamed documents get_finder shows", updates["documents_seen"], "documents")
        table.add("all shown, after the churn tool answered", updates["all_visible_after_end_s"], "s")
        tables.append(table)
    return tables


# -- memory -------------------------------------------------------------------------------


def memory_table(result: dict[str, Any]) -> Table:
    table = Table(
        "Server cost per idle connected client",
        [
            "idle clients",
            "server RSS MB",
            "RSS KB/client",
            "server threads",
            "threads/client",
            "server fds",
            "fds/client",
        ],
    )
    base = result["baseline"]
    table.add(0, base["rss_mb"], None, base["threads"], None, base["fds"], None)
    for row in result["levels"]:
        table.add(
            row["clients"],
            row["rss_mb"],
            row["rss_mb_per_client"] * 1024,
            row["threads"],
            row["threads_per_client"],
            row["fds"],
            row["fds_per_client"],
        )
    return table


def hostile_tables(result: dict[str, Any]) -> list[Table]:
    from .hostile import summary

    hold = Table(
        "Hostile clients: how long one socket holds a serve() slot",
        ["socket", "samples", "median s", "max s", "still open"],
    )
    for kind, held in result["hold"].items():
        numbers = summary(held)
        hold.add(kind, len(held), numbers["median"], numbers["max"], numbers["still_open"])
    connect = Table(
        "Hostile clients: a legitimate Agent's connect + join while hostile sockets are kept open",
        ["server", "hostile sockets", "connect + join ms", "hostile sockets closed meanwhile"],
    )
    for row in result["connect"]:  # in ms: on a quiet machine it may take under 5 ms, "0.00" s
        connect.add(row["server"], row["hostile"], row["seconds"] * 1000, row["reopened"])
    flood = Table(
        "Hostile clients: serve() worker RSS under Agents that stop reading",
        ["flood", "calls sent", "peak RSS MB", "RSS after MB", "dropped after s"],
    )
    flood.add(0, 0, result["flood"]["baseline_mb"], result["flood"]["baseline_mb"], None)
    for row in result["flood"]["floods"]:
        flood.add(row["flood"], row["sent"], row["peak_mb"], row["after_mb"], row["dropped_after"])
    return [hold, connect, flood]


# -- the machine ------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def machine() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "commit": _git_commit(),
        "packages": versions,
    }


def header(info: dict[str, Any], echo_label: str | None, plan: dict[str, Any]) -> str:
    packages = ", ".join(f"{name} {version}" for name, version in info["packages"].items())
    return "\n".join(
        [
            f"- date: {info['date']}, commit {info['commit']}",
            f"- machine: {info['cpu']}, {info['cores']} cores, {info['memory_gb']} GB RAM; {info['os']}",
            f"- Python {info['python']}; {packages}",
            f"- MCP echo server: {echo_label or NA}",
            f"- load plan: {plan}",
            "",
        ]
    )


def capacity_table(result: dict[str, Any], labels: dict[str, str]) -> Table:
    table = Table(
        "Capacity: idle authenticated connections held by one Server process",
        [
            "server",
            "connections",
            "connected",
            "connect s",
            "RSS MB",
            "KB/connection",
            "threads",
            "probe p50 ms unloaded",
            "probe p99 ms unloaded",
            "probe p50 ms loaded",
            "probe p99 ms loaded",
            "p99 loaded / unloaded",
            "dropped",
            "load",
        ],
    )
    for row in result["rows"]:
        label = labels.get(row["server"], row["server"])
        if "error" in row:
            table.add(label, row["connections"], 0, *[None] * 10, f"{row['load'][0]:.1f}-{row['load'][1]:.1f}")
            continue
        unloaded, loaded = row["unloaded_ms"], row["loaded_ms"]
        table.add(
            label,
            row["connections"],
            row["connected"],
            row["connect_s"],
            row["loaded"]["rss_mb"],
            row["kb_per_connection"],
            row["loaded"]["threads"],
            unloaded["p50"],
            unloaded["p99"],
            loaded["p50"],
            loaded["p99"],
            loaded["p99"] / unloaded["p99"],
            row["lost"] + row["failed"],
            f"{row['load'][0]:.1f}-{row['load'][1]:.1f}",
        )
    return table


def load_note(loads: dict[str, tuple[list[float], list[float]]]) -> Table:
    table = Table("Machine load during each section (1-min load average)", ["section", "before", "after"])
    for section, (before, after) in loads.items():
        table.add(section, before[0], after[0])
    return table
