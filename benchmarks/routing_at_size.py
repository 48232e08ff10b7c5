"""Routing at size: tool calls through one Server process holding thousands of offices,
ours against the official a2c-smcp 0.4.2 Server, in one run::

    python -m benchmarks.routing_at_size                     # 100 and 1,000 offices, the three Servers
    python -m benchmarks.routing_at_size --offices 100,1000,3000 --seconds 20
    python -m benchmarks.routing_at_size --servers serve_gevent --offices 1000 --profile /tmp/prof

Per office an Agent and a Computer, both wire clients of one light asyncio load process
(`routing_load.py`: the Computer answers at once, so no MCP server's cost is in a call),
one call in flight per Agent. For each number of offices and each Server: a fresh Server
process (ours with `serve()`, mode gevent and mode threads, `threads` = connections +
100; the official one as it ships for production, python-socketio's AsyncServer under
uvicorn: `capacity.start_server`), every office joined, a warm-up, then a measured
window: calls answered in it per second, their latency p50/p99, calls left unanswered,
and the Server process's CPU (user + system, psutil) over the window per call. Beside
it the load process's own CPU (near a whole core, the load was the bound) and what the
rest of the machine ran. Ours are then divided by the official Server's at the same
size. `--profile DIR` records the Server during the window with py-spy (if installed:
``pip install py-spy``) as collapsed stacks, one file per point; sampling costs the
Server CPU, so a profiled run's numbers are not ones to report.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import psutil

from tests.interop.venv import CURRENT, official_sdk_python

from . import arguments, capacity, memory, report
from .processes import Peers

log = logging.getLogger("benchmarks.routing_at_size")

SERVERS = ("serve_gevent", "serve_threads", "official_042")
LABELS = {server: capacity.LABELS[server] for server in SERVERS}
#: Seconds per thousand offices for every office to be joined.
JOIN_SECONDS_PER_THOUSAND = 60.0
#: Seconds past the window for the calls in flight to be answered and counted.
RESULT_GRACE = 90.0
#: Seconds py-spy may take past the window to write its profile.
PROFILE_GRACE = 10.0


def one_point(
    server: str, offices: int, warmup: float, seconds: float, official_python: Callable[[], Any], profile: Path | None
) -> dict[str, Any]:
    """One Server process, `offices` offices calling: the row's measurements."""
    with Peers() as peers:
        url, process = capacity.start_server(peers, server, 2 * offices, official_python)
        argv = [sys.executable, "-m", "benchmarks.routing_load", "--url", url, "--offices", str(offices)]
        load = peers.spawn([*argv, "--key", capacity.KEY], f"routing-load-{server}-{offices}")
        ready = load.wait_for("ready", JOIN_SECONDS_PER_THOUSAND * max(1.0, offices / 1000))
        threads = process.num_threads()
        after = load.mark()
        load.send({"run": {"warmup": warmup, "seconds": seconds}})
        opened = load.wait_for_index("mark", warmup + RESULT_GRACE, after=after)
        before, machine = process.cpu_times(), _busy()
        recorder = _profile(process.pid, seconds, profile / f"{server}-{offices}.txt") if profile else None
        try:
            load.wait_for("mark", seconds + RESULT_GRACE, after=opened + 1)
            spent, machine = process.cpu_times(), _busy() - machine
            result = load.wait_for("result", RESULT_GRACE, after=opened + 1)
        finally:
            if recorder is not None:
                _stop(recorder)
    user, system = spent.user - before.user, spent.system - before.system
    cpu = user + system
    calls = result["calls"]
    return {
        "server": server,
        "offices": offices,
        "connect_s": ready["connect_s"],
        "server_threads": threads,
        **{key: result[key] for key in ("calls", "calls_per_s", "p50_ms", "p99_ms", "errors", "unanswered", "first_error", "load_cpu_s")},
        "server_cpu_s": cpu,
        "server_system_share": system / cpu if cpu else None,
        # what the rest of the machine ran meanwhile (other people's work), in cores
        "others_cores": max(0.0, machine - cpu - result["load_cpu_s"]) / seconds,
        "cpu_ms_per_call": cpu / calls * 1e3 if calls else None,
        "p99_over_p50": result["p99_ms"] / result["p50_ms"] if calls else None,
    }


def _busy() -> float:
    """CPU seconds the whole machine has spent busy (every core; Linux counts guest time in
    user time too)."""
    times = psutil.cpu_times()
    waiting = times.idle + sum(getattr(times, field, 0.0) for field in ("iowait", "guest", "guest_nice"))
    return sum(times) - waiting


def _profile(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling `pid` for `seconds` (the thread holding the GIL: where the Server's
    Python time goes), collapsed stacks to `out`."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "100", "--gil", "--nonblocking"]
    return subprocess.Popen([*argv, "--format", "raw", "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(recorder: subprocess.Popen[bytes]) -> None:
    """py-spy ends by itself after its duration (it writes its file then); SIGINT makes it
    write what it has when it takes longer (thousands of threads to sample)."""
    try:
        recorder.wait(PROFILE_GRACE)
    except subprocess.TimeoutExpired:
        recorder.send_signal(signal.SIGINT)
        try:
            recorder.wait(PROFILE_GRACE)
        except subprocess.TimeoutExpired:
            recorder.kill()
            recorder.wait(PROFILE_GRACE)


def run(
    levels: tuple[int, ...], servers: tuple[str, ...], warmup: float, seconds: float, profile: Path | None
) -> list[dict[str, Any]]:
    """Every (offices, server) point; one that fails is kept as its error and the others go on."""
    official_python = functools.cache(functools.partial(official_sdk_python, CURRENT))
    rows = []
    for offices in levels:
        for server in servers:
            log.info("routing at size: %s, %d offices ...", server, offices)
            try:
                row = one_point(server, offices, warmup, seconds, official_python, profile)
            except Exception as exc:
                log.exception("routing at size: %s at %d offices failed", server, offices)
                row = {"server": server, "offices": offices, "error": f"{type(exc).__name__}: {exc}"[:500]}
            rows.append(row)
    return rows


def tables(rows: list[dict[str, Any]]) -> list[report.Table]:
    points = report.Table(
        "Routing at size: one call in flight per Agent, a wire Computer per office",
        ["server", "offices", "calls/s", "Server CPU ms/call", "p50 ms", "p99 ms", "p99/p50", "errors", "unanswered", "load CPU s", "Server threads", "others' cores"],
    )
    for row in rows:
        label = LABELS[row["server"]]
        if "error" in row:
            points.add(label, row["offices"], *[None] * 10)
            continue
        points.add(
            label, row["offices"], row["calls_per_s"], row["cpu_ms_per_call"], row["p50_ms"], row["p99_ms"],
            row["p99_over_p50"], row["errors"], row["unanswered"], row["load_cpu_s"], row["server_threads"], row["others_cores"],
        )  # fmt: skip
    ratios = report.Table(
        "Routing at size: ours against the official 0.4.2 Server (same size, same run)",
        ["server", "offices", "calls/s ÷ official's", "CPU per call ÷ official's"],
    )
    official = {row["offices"]: row for row in rows if row["server"] == "official_042" and "error" not in row}
    for row in rows:
        theirs = official.get(row["offices"])
        if row["server"] == "official_042" or theirs is None or "error" in row:
            continue
        cpu = row["cpu_ms_per_call"] / theirs["cpu_ms_per_call"] if row["cpu_ms_per_call"] and theirs["cpu_ms_per_call"] else None
        speed = row["calls_per_s"] / theirs["calls_per_s"] if theirs["calls_per_s"] else None
        ratios.add(LABELS[row["server"]], row["offices"], speed, cpu)
    return [points, ratios]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offices", type=arguments.counts, default=(100, 1000), help="offices per point (default 100,1000)")
    parser.add_argument("--servers", type=arguments.names(SERVERS, "servers"), default=SERVERS, help=f"default {','.join(SERVERS)}")
    parser.add_argument("--warmup", type=arguments.seconds, default=5.0, help="seconds of calls before the window")
    parser.add_argument("--seconds", type=arguments.seconds, default=15.0, help="seconds of the measured window")
    parser.add_argument("--profile", type=Path, help="record each Server with py-spy into this folder")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log.setLevel(logging.INFO)
    memory.raise_fd_limit(2 * max(args.offices))
    rows = run(args.offices, args.servers, args.warmup, args.seconds, args.profile)
    info = report.machine()
    print(report.header(info, None, {"warmup_s": args.warmup, "window_s": args.seconds}))
    for table in tables(rows):
        print(table.markdown())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"machine": info, "rows": rows}, out, indent=2)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
