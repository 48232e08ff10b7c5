"""The benchmark script (`python -m benchmarks`, see benchmarks/README.md) still runs.

Its numbers are not tested (they depend on the machine); what is: every section runs
in ``--quick`` mode without errors, prints well-formed Markdown tables whose numeric
cells are numbers, writes the same results as JSON, and leaves no process behind. It
starts the official SDK's roles too, hence the `interop` mark.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 300.0

PATH_LABELS = (
    "floor: MCP ClientSession → stdio echo (asyncio)",
    "floor: raw python-socketio call (websocket)",
    "floor: Computer.call_tool, no Socket.IO",
    "smcp_sync: Agent → Server → Computer → MCP",
    "official 0.1.6: Agent → Server → Computer → MCP",
    "official 0.4.2: Agent → Server → Computer → MCP",
)
#: The finder sections of the quick plan (benchmarks/__main__.py QUICK_FINDER).
QUICK_DOCUMENTS = 2 * 50
QUICK_UPDATES = 20


def parse_tables(report: str) -> dict[str, list[dict[str, str]]]:
    """``### title`` + Markdown table → {title: [row as {column: cell}]}; checks the shape."""
    tables: dict[str, list[dict[str, str]]] = {}
    for block in report.split("\n### ")[1:]:
        title, *lines = block.splitlines()
        rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]
        header, separator, *body = rows
        assert set(separator) == {"---"} and len(separator) == len(header), f"bad separator in {title!r}"
        assert body, f"table {title!r} has no rows"
        for row in body:
            assert len(row) == len(header), f"row {row} of {title!r} does not match {header}"
        tables[title] = [dict(zip(header, row, strict=True)) for row in body]
    return tables


def number(cell: str) -> float:
    value = float(cell)
    assert math.isfinite(value), cell
    return value


def run_watching_descendants(argv: list[str], logs: Path, timeout: float) -> tuple[int, str, str, list[psutil.Process]]:
    """Run `argv` (output to files in `logs`: no pipe to fill up); return its exit code,
    stdout, stderr, and every descendant seen while it ran (sampled), to check afterwards
    that none outlived it."""
    out_path, err_path = logs / "stdout.txt", logs / "stderr.txt"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = psutil.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            for child in proc.children(recursive=True):
                seen.setdefault(child.pid, child)
            try:
                proc.wait(0.2)  # sampling: a descendant's start has no event to wait on
            except psutil.TimeoutExpired:
                pass
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
    return (
        proc.returncode,
        out_path.read_text(encoding="utf-8"),
        err_path.read_text(encoding="utf-8"),
        list(seen.values()),
    )


@pytest.mark.interop  # the official sections
@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_quick_run_prints_every_table_with_numbers_and_leaves_nothing_running(tmp_path, no_leaks):
    results_path = tmp_path / "results.json"
    returncode, stdout, stderr, descendants = run_watching_descendants(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(results_path)], tmp_path, RUN_TIMEOUT
    )
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    assert "failed" not in stdout
    tables = parse_tables(stdout)

    round_trips = {row["path"]: row for row in tables["Echo tool call round trip (medians over rounds)"]}
    assert tuple(round_trips) == PATH_LABELS
    for label, row in round_trips.items():
        assert int(row["calls"]) > 0 and int(row["errors"]) == 0, (label, row)
        for column in (
            "p50 ms",
            "p99 ms",
            "seq calls/s",
            "1 callers calls/s",
            "4 callers calls/s",
            "16 callers calls/s",
            "CPU ms/call",
        ):
            assert number(row[column]) > 0, (label, column, row)
        assert number(row["p99 ms"]) >= number(row["p50 ms"])

    ratios = {row["comparison"]: number(row["ratio"]) for row in tables["Ratios (paired per round, median)"]}
    assert len(ratios) == 13 and all(value > 0 for name, value in ratios.items() if "/ raw socket.io" not in name)
    assert {"official 0.4.2 p50 / smcp_sync p50", "smcp_sync / official 0.4.2 calls/s, 16 callers"} <= set(ratios)

    catalogue = {row["measure"]: number(row["value"]) for row in tables["Finder: 2 MCP servers × 50 documents"]}
    assert catalogue["requests the Server timed out (408) before the catalogue was complete"] == 0
    assert f"floor: {QUICK_DOCUMENTS} Level 1 reads, ClientSession, 16 in flight" in catalogue
    assert "catalogue complete / floor with subscriptions" in catalogue
    for query in ("(first page)", ", 1 keyword", ", file_type", ", last page"):
        label = f"warm get_finder {query}".replace(" ,", ",")
        assert catalogue[f"{label} p99"] >= catalogue[f"{label} p50"] > 0, label
    # RSS per document is a difference of two processes' RSS: any sign on 100 documents
    assert all(value > 0 for name, value in catalogue.items() if "408" not in name and "per cached" not in name)
    storm = {
        row["measure"]: row["value"]
        for row in tables["Notification storm on one document (2 MCP servers × 50 documents)"]
    }
    assert number(storm["resources/updated sent by the MCP server"]) == 50
    assert 1 <= number(storm["notify:update_finder received by the Agent"]) <= 50
    assert number(storm["final state visible to get_finder, after the storm tool answered"]) >= 0
    updates = {
        row["measure"]: number(row["value"])
        for row in tables["Single-document updates while an Agent queries (2 MCP servers × 50 documents)"]
    }
    assert updates["updates made by the MCP server (one resources/updated each)"] == QUICK_UPDATES
    assert updates["get_finder (first page) during the updates"] > 0
    assert updates["get_finder errors during the updates"] == 0
    assert updates["get_finder during the updates p99"] >= updates["get_finder during the updates p50"] > 0
    assert updates["documents renamed"] == updates["renamed documents get_finder shows"] == QUICK_UPDATES
    assert updates["all shown, after the churn tool answered"] >= 0

    memory = tables["Server cost per idle connected client"]
    assert [int(row["idle clients"]) for row in memory] == [0, 2, 5]
    for row in memory[1:]:
        assert (
            number(row["server RSS MB"]) > 0 and number(row["threads/client"]) >= 1 and number(row["fds/client"]) >= 1
        )

    hold = {row["socket"]: row for row in tables["Hostile clients: how long one socket holds a serve() slot"]}
    assert set(hold) == {"silent websocket", "half request line"}
    assert all(int(row["still open"]) == 0 and number(row["max s"]) > 0 for row in hold.values())
    connect = tables["Hostile clients: a legitimate Agent's connect + join while hostile sockets are kept open"]
    assert [int(row["hostile sockets"]) for row in connect] == [0, 10] * 3
    assert all(number(row["connect + join ms"]) > 0 for row in connect)
    flood = tables["Hostile clients: serve() worker RSS under Agents that stop reading"]
    assert [int(row["flood"]) for row in flood] == [0, 1] and number(flood[1]["dropped after s"]) > 0

    loads = tables["Machine load during each section (1-min load average)"]
    assert [row["section"] for row in loads] == ["round trips", "finder", "memory", "hostile"]
    assert all(number(row["before"]) >= 0 and number(row["after"]) >= 0 for row in loads)

    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert set(results["summaries"]) == {
        "mcp_direct",
        "raw_socketio",
        "local_computer",
        "smcp_sync",
        "official",
        "official_042",
    }
    assert results["failures"] == {} and [level["clients"] for level in results["memory"]["levels"]] == [2, 5]
    finder = results["finder"]
    assert finder["catalogue"]["documents"] == finder["floor"]["reads"] == QUICK_DOCUMENTS
    assert finder["storm"]["notices_sent"] == 50 and finder["updates"]["updates_sent"] == QUICK_UPDATES

    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"


@pytest.mark.interop  # the official Server beside ours
@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_quick_capacity_run_holds_every_connection_on_every_server(tmp_path, no_leaks):
    """The opt-in capacity section (not in the run above): each server, our modes and the
    official one, holds the quick level's idle connections and answers the probe."""
    returncode, stdout, stderr, descendants = run_watching_descendants(
        [sys.executable, "-m", "benchmarks", "--only", "capacity", "--quick"], tmp_path, RUN_TIMEOUT
    )
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    rows = parse_tables(stdout)["Capacity: idle authenticated connections held by one Server process"]
    assert [row["server"] for row in rows] == [
        "smcp_sync start() (werkzeug threads)",
        "smcp_sync serve() threads (gthread)",
        "smcp_sync serve() gevent",
        "official 0.4.2 (AsyncServer, uvicorn)",
    ]
    for row in rows:
        assert int(row["connected"]) == int(row["connections"]) == 20 and int(row["dropped"]) == 0, row
        assert number(row["probe p99 ms loaded"]) >= number(row["probe p50 ms loaded"]) > 0, row
        assert number(row["RSS MB"]) > 0 and number(row["connect s"]) > 0, row
    assert int(rows[2]["threads"]) < 10  # gevent: no thread per connection
    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"


@pytest.mark.interop  # the official Server beside ours
@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_a_short_routing_at_size_run_routes_every_call_on_every_server(tmp_path, no_leaks):
    """benchmarks/routing_at_size.py (its own script): each Server, our two modes and the
    official one, routes the wire Agents' calls to their wire Computers, answered and
    checked, and the ratios table compares ours with the official one."""
    argv = [sys.executable, "-m", "benchmarks.routing_at_size", "--offices", "5", "--warmup", "0.5", "--seconds", "1"]
    returncode, stdout, stderr, descendants = run_watching_descendants(argv, tmp_path, RUN_TIMEOUT)
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    tables = parse_tables(stdout)
    rows = tables["Routing at size: one call in flight per Agent, a wire Computer per office"]
    assert [row["server"] for row in rows] == [
        "smcp_sync serve() gevent",
        "smcp_sync serve() threads (gthread)",
        "official 0.4.2 (AsyncServer, uvicorn)",
    ]
    for row in rows:
        assert row["offices"] == "5" and row["errors"] == row["unanswered"] == "0", row
        assert number(row["calls/s"]) > 0 and number(row["Server CPU ms/call"]) > 0, row
        assert number(row["p99 ms"]) >= number(row["p50 ms"]) > 0, row
    ratios = tables["Routing at size: ours against the official 0.4.2 Server (same size, same run)"]
    assert [(row["server"], number(row["calls/s ÷ official's"]) > 0) for row in ratios] == [
        ("smcp_sync serve() gevent", True),
        ("smcp_sync serve() threads (gthread)", True),
    ]
    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"


@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_a_short_observability_run_compares_every_figure_on_against_off(tmp_path, no_leaks):
    """benchmarks/observability.py (its own script): a round of metrics and tracing on
    against off, every figure measured on both sides (the tracing extra's SDK in the
    Agent's, the Server's and the Computer's processes)."""
    pytest.importorskip("opentelemetry.sdk", reason="the 'on' side traces (the tracing extra)")
    argv = [sys.executable, "-m", "benchmarks.observability", "--rounds", "1", "--calls", "8"]
    returncode, stdout, stderr, descendants = run_watching_descendants(argv, tmp_path, RUN_TIMEOUT)
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    ((title, rows),) = parse_tables("\n" + stdout).items()  # the report begins with its title
    assert title.startswith("observability: metrics+tracing on against off (1 rounds")
    assert [row["figure"] for row in rows] == [
        "p50, 1 caller (ms)",
        "p99, 1 caller (ms)",
        "p50, 16 callers (ms)",
        "calls/s, 16 callers",
        "Server CPU per call, 16 callers (ms)",
        "Computer CPU per call with its MCP server, 16 callers (ms)",
    ]
    for row in rows:
        assert number(row["off (median)"]) > 0 and number(row["on (median)"]) > 0, row
    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"


@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_a_quick_relay_run_compares_both_paths_and_stops_its_relay(tmp_path, no_leaks):
    """benchmarks/relay.py (its own script): every path answered, the 16-caller rounds
    paired with the CPU of every part in play, the seats measured, and the relay it
    started stopped at the end (with two cores, as `--split-cores`; the callers niced)."""
    argv = [sys.executable, "-m", "benchmarks.relay", "--quick", "--callers-nice", "5"]
    if len(os.sched_getaffinity(0)) >= 2:
        argv.append("--split-cores")
    began = time.time()
    returncode, stdout, stderr, descendants = run_watching_descendants(argv, tmp_path, RUN_TIMEOUT)
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    tables = parse_tables("\n" + stdout)  # the report begins with its first title
    paths = tables["relay: a call through the relay against a direct Agent (ms, calls/s; median of the rounds)"]
    assert [row["path"] for row in paths] == [
        "list_room, direct Agent, 1 caller",
        "list_room, relay, 1 caller",
        "echo, direct Agent, 1 caller",
        "echo, relay, 1 caller",
        "echo, direct Agent, 16 threads in 1 process",
        "echo, relay, 4 processes x 4 threads, one seat",
    ]
    for row in paths:
        assert number(row["p99"]) >= number(row["p50"]) > 0 and number(row["calls/s"]) > 0, row
        assert number(row["CPU per call (ms)"]) >= 0, row  # CPU times tick in 10 ms: 20 quick calls may take none
    assert all(number(row["CPU per call (ms)"]) > 0 for row in paths[4:]), paths[4:]  # 80 calls of 16 callers
    pairs = tables["relay: 16 callers, each round's pair (relay = 4 processes x 4 threads, one seat)"]
    assert [row["round"] for row in pairs] == ["1", "median"]
    assert number(pairs[0]["ratio"]) == number(pairs[1]["ratio"]) > 0
    assert len(pairs[0]["relay: Server+Computers, MCP, callers, relay"].split(",")) == 4
    (seats,) = tables["relay: one relay holding many seats"]
    assert seats["seats"] == "20" and number(seats["list_room calls/s"]) > 0
    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"
    relays = [p.pid for p in psutil.process_iter(["cmdline", "create_time"])
              if p.info["create_time"] >= began and "agent-relay" in (p.info["cmdline"] or ())]  # fmt: skip
    assert not relays, f"the relay the benchmark started still runs (detached, so no descendant): {relays}"
