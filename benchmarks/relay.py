"""The Agent relay against a direct Agent, and one relay holding many seats.

    python -m benchmarks.relay [--quick] [--seats 1000]

One Server and two Computers (the test tool server's `echo`; one in the direct Agent's
office, one in the relay's) run in this process; the
callers are other processes (`python -m benchmarks.relay caller ...`), so that the
relay's extra hops are measured as a host would see them:

* **sequential**: one caller thread, `--calls` calls, p50 and p99: a direct Agent and
  a relay Agent, `list_room` (the Server answers: the relay's own cost shows) and a
  tool call; rounds alternate the paths (`--rounds`), medians reported;
* **16 callers**: a direct Agent in one process with 16 threads, then relay Agents in 4
  processes of 4 threads (one seat): p50 and calls/s of all callers together;
* **seats**: one relay opens `--seats` seats (each its own office, one caller process
  opening them from 16 threads); the relay's RSS and threads per seat, then `list_room`
  on every seat from 16 threads (the Server answers it: no Computer per office), calls/s.

Prints Markdown tables (### title + table) like `python -m benchmarks`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.computer import allow_all
from smcp_sync.relay.link import relay_status
from smcp_sync.relay.place import RelayPlace
from smcp_sync.server import ServerLimits
from tests.mcp_servers import TOOL_SERVER

from .loadgen import summarize
from .memory import raise_fd_limit

#: Each path's office and Computer: the relay's seat lingers after its round, so the
#: direct Agent (a seat of its own) has an office of its own, and rounds can alternate.
OFFICES = {"direct": ("bench-direct", "c-direct"), "relay": ("bench-relay", "c-relay")}
REPO = Path(__file__).resolve().parents[1]
#: (label, transport, op, processes, threads each).
PATHS = (
    ("list_room, direct Agent, 1 caller", "direct", "list_room", 1, 1),
    ("list_room, relay, 1 caller", "relay", "list_room", 1, 1),
    ("echo, direct Agent, 1 caller", "direct", "echo", 1, 1),
    ("echo, relay, 1 caller", "relay", "echo", 1, 1),
    ("echo, direct Agent, 16 threads in 1 process", "direct", "echo", 1, 16),
    ("echo, relay, 4 processes x 4 threads, one seat", "relay", "echo", 4, 4),
)
#: Seconds a caller process may take, all calls included.
CALLER_TIMEOUT = 600.0


def caller(args: argparse.Namespace) -> None:
    """One caller process: `threads` threads, `calls` echo calls each (or, with `seats`,
    opens that many seats and calls `list_room` on each); prints one JSON line."""
    if args.seats:
        return _seat_caller(args)
    office, computer = OFFICES[args.mode]
    if args.mode == "direct":
        agent = Agent("bench")
        agent.connect(args.url, timeout=30)
        agent.join_office(office, timeout=30)
    else:
        agent = Agent.via_relay("bench", url=args.url, office_id=office, relay_dir=args.folder)
    agent.call_tool(computer, "tools__echo", {"text": "warm"}, timeout=30)
    sys.stdin.readline()  # every process is ready: go
    latencies: list[float] = []
    lock = threading.Lock()

    def run() -> None:
        mine = []
        for n in range(args.calls):
            started = time.perf_counter()
            if args.op == "list_room":
                agent.list_room(timeout=30)
            else:
                agent.call_tool(computer, "tools__echo", {"text": f"c{n}"}, timeout=30)
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    began = time.perf_counter()
    with ThreadPoolExecutor(args.threads) as pool:
        for _ in range(args.threads):
            pool.submit(run)
    print(json.dumps({"latencies": latencies, "seconds": time.perf_counter() - began}), flush=True)
    agent.close()


def _seat_caller(args: argparse.Namespace) -> None:
    agents = [Agent.via_relay("bench", url=args.url, office_id=f"o{n}", relay_dir=args.folder) for n in range(args.seats)]
    with ThreadPoolExecutor(16) as pool:
        began = time.perf_counter()
        list(pool.map(lambda agent: agent.connect(args.url, timeout=120), agents))
        opened = time.perf_counter() - began
        print(json.dumps({"opened": opened}), flush=True)
        sys.stdin.readline()
        began = time.perf_counter()
        list(pool.map(lambda agent: agent.list_room(timeout=60), agents * args.calls))
        seconds = time.perf_counter() - began
    print(json.dumps({"calls": len(agents) * args.calls, "seconds": seconds}), flush=True)
    for agent in agents:
        agent.close()


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.relay", "caller", *args],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _together(processes: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    """Start the callers' calls together; their result lines."""
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=CALLER_TIMEOUT)
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _round(url: str, folder: str, mode: str, op: str, processes: int, threads: int, calls: int) -> dict[str, Any]:
    args = ("--threads", str(threads), "--calls", str(calls), "--op", op)
    callers = [_spawn(mode, url, folder, *args) for _ in range(processes)]
    results = _together(callers)
    latencies = [value for result in results for value in result["latencies"]]
    seconds = max(result["seconds"] for result in results)
    return {**summarize(latencies), "calls_per_s": len(latencies) / seconds}


def _seats(url: str, folder: str, seats: int, calls: int) -> dict[str, Any]:
    relay = psutil.Process(relay_status(RelayPlace.at(folder), 10)["pid"])
    rss, threads = relay.memory_info().rss, relay.num_threads()
    process = _spawn("relay", url, folder, "--seats", str(seats), "--calls", str(calls))
    assert process.stdout is not None and process.stdin is not None
    opened = json.loads(process.stdout.readline())["opened"]
    grown_rss, grown_threads = relay.memory_info().rss - rss, relay.num_threads() - threads
    result = _together([process])[0]
    return {
        "seats": seats,
        "open_s": opened,
        "rss_per_seat_kb": grown_rss / seats / 1024,
        "threads_per_seat": grown_threads / seats,
        "calls_per_s": result["calls"] / result["seconds"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=None, help="calls per caller thread")
    parser.add_argument("--seats", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    calls = args.calls or (20 if args.quick else 400)
    seats = args.seats or (20 if args.quick else 1000)
    raise_fd_limit(seats * 2)
    folder = tempfile.mkdtemp(prefix="bench-relay-", dir="/tmp")
    os.rmdir(folder)
    tools = {"name": "tools", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER]}}
    with SMCPServer(limits=ServerLimits(max_connections_per_ip=None)) as server:  # the seats all come from one address
        url = server.start()
        with contextlib.ExitStack() as stack:
            for office, name in OFFICES.values():
                stack.enter_context(Computer(name, [tools], confirm=allow_all)).connect(url, office, timeout=60)
            results: dict[str, list[dict[str, Any]]] = {label: [] for label, *_ in PATHS}
            for _ in range(args.rounds or (1 if args.quick else 3)):  # alternating: the machine's load hits both alike
                for label, mode, op, processes, threads in PATHS:
                    each = calls if threads == 1 else max(1, calls // 4)
                    results[label].append(_round(url, folder, mode, op, processes, threads, each))
            _print_calls(results)
            _print_seats(_seats(url, folder, seats, 1 if args.quick else 5))
        subprocess.run([sys.executable, "-c", "from smcp_sync.cli import main; main()", "agent-relay", "--folder", folder, "--stop"],
                       check=False, timeout=120)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)  # the stopped relay's folder


def _print_calls(results: dict[str, list[dict[str, Any]]]) -> None:
    print("### relay: a call through the relay against a direct Agent (ms, calls/s; median of the rounds)\n")
    print("| path | rounds | calls per round | p50 | p99 | calls/s |\n|---|---|---|---|---|---|")
    for label, rounds in results.items():
        p50, p99, rate = (statistics.median(r[key] for r in rounds) for key in ("p50_ms", "p99_ms", "calls_per_s"))
        print(f"| {label} | {len(rounds)} | {rounds[0]['n']} | {p50:.2f} | {p99:.2f} | {rate:.0f} |")
    print(flush=True)


def _print_seats(row: dict[str, Any]) -> None:
    print("### relay: one relay holding many seats\n")
    print("| seats | open all (s) | relay RSS per seat (KB) | relay threads per seat | list_room calls/s |\n|---|---|---|---|---|")
    print(f"| {row['seats']} | {row['open_s']:.1f} | {row['rss_per_seat_kb']:.0f} | "
          f"{row['threads_per_seat']:.1f} | {row['calls_per_s']:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["caller"]:
        parser = argparse.ArgumentParser()
        parser.add_argument("mode", choices=("direct", "relay"))
        parser.add_argument("url")
        parser.add_argument("folder")
        parser.add_argument("--threads", type=int, default=1)
        parser.add_argument("--calls", type=int, default=1)
        parser.add_argument("--seats", type=int, default=0)
        parser.add_argument("--op", choices=("echo", "list_room"), default="echo")
        caller(parser.parse_args(sys.argv[2:]))
    else:
        main()
