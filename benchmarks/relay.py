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
  processes of 4 threads (one seat): p50 and calls/s of all callers together, and the
  CPU per call of every process in play (this one: the Server and the Computers; their
  MCP servers, the callers, the relay), from every caller ready to every result read:
  the two cores are what both paths share. Each round's pair is also shown side by
  side, its ratio taken within the round;
* **seats**: one relay opens `--seats` seats (each its own office, one caller process
  opening them from 16 threads); the relay's RSS and threads per seat, then `list_room`
  on every seat from 16 threads (the Server answers it: no Computer per office), calls/s.

With `--split-cores`, this process (and so its MCP servers) runs on one core and the
callers (and so the relay they start) on another: the two hosts of a deployment, the
Server's and the web app's, as far as two cores can show them; without it every process
shares both cores, and calls/s measures the machine's CPU per call. With
`--callers-nice N`, the callers (and so the relay) run at niceness N: the Server's side
gets the cores whenever it wants them and the callers' side what it leaves, as if each
host were its own, without halving what either may use (`--split-cores` does, and the
VM's two cores are not independent: benchmarks/README.md, Run AD).

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
from smcp_sync.connection.session import NotConnectedError
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
#: The parts whose CPU a round counts (`_in_play`).
CPU_PARTS = ("server", "mcp", "callers", "relay")
#: Seconds a caller process may take, all calls included.
CALLER_TIMEOUT = 600.0


def caller(args: argparse.Namespace) -> None:
    """One caller process: `threads` threads, `calls` echo calls each (or, with `seats`,
    opens that many seats and calls `list_room` on each); prints one JSON line."""
    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    if args.nice:
        os.nice(args.nice)
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
    print(json.dumps({"ready": True}), flush=True)
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


#: With --split-cores, the core the callers (and the relay they start) run on.
_callers_core: int | None = None
#: With --callers-nice, the niceness the callers (and the relay they start) run at.
_callers_nice = 0


def _spawn(*args: str) -> subprocess.Popen[str]:
    core = () if _callers_core is None else ("--core", str(_callers_core))
    nice = ("--nice", str(_callers_nice)) if _callers_nice else ()
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.relay", "caller", *args, *core, *nice],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _together(processes: list[subprocess.Popen[str]], folder: str) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Start the ready callers' calls together; their result lines, and the CPU seconds
    each part in play spent from the start to the last result (`_in_play`)."""
    watched = _in_play(folder, {process.pid for process in processes})
    cpu = _cpu_seconds(watched)
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    lines = []
    for process in processes:
        assert process.stdout is not None
        lines.append(process.stdout.readline())  # the result; the caller then closes its Agent
    cpu = {part: seconds - cpu[part] for part, seconds in _cpu_seconds(watched).items()}
    for process in processes:
        process.communicate(timeout=CALLER_TIMEOUT)
    return [json.loads(line) for line in lines], cpu


def _in_play(folder: str, callers: set[int]) -> dict[str, list[psutil.Process]]:
    """The processes in play, by part (`CPU_PARTS`): this one (the Server, the
    Computers), the MCP servers and the callers (its children), and the relay, if one
    runs (a caller started it: it is no child of ours)."""
    here = psutil.Process()
    children = here.children(recursive=True)
    parts: dict[str, list[psutil.Process]] = {
        "server": [here],
        "mcp": [child for child in children if child.pid not in callers],
        "callers": [child for child in children if child.pid in callers],
        "relay": [],
    }
    with contextlib.suppress(NotConnectedError):
        parts["relay"].append(psutil.Process(relay_status(RelayPlace.at(folder), 10)["pid"]))
    return parts


def _cpu_seconds(parts: dict[str, list[psutil.Process]]) -> dict[str, float]:
    seconds = dict.fromkeys(parts, 0.0)
    for part, processes in parts.items():
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                seconds[part] += times.user + times.system
    return seconds


def _round(url: str, folder: str, mode: str, op: str, processes: int, threads: int, calls: int) -> dict[str, Any]:
    args = ("--threads", str(threads), "--calls", str(calls), "--op", op)
    callers = [_spawn(mode, url, folder, *args) for _ in range(processes)]
    for process in callers:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline()) == {"ready": True}, "a caller could not warm up"
    results, cpu = _together(callers, folder)
    latencies = [value for result in results for value in result["latencies"]]
    seconds = max(result["seconds"] for result in results)
    per_call = {f"cpu_ms_{part}": value / len(latencies) * 1e3 for part, value in cpu.items()}
    return {**summarize(latencies), "calls_per_s": len(latencies) / seconds,
            "cpu_ms_per_call": sum(per_call.values()), **per_call}  # fmt: skip


def _seats(url: str, folder: str, seats: int, calls: int) -> dict[str, Any]:
    relay = psutil.Process(relay_status(RelayPlace.at(folder), 10)["pid"])
    rss, threads = relay.memory_info().rss, relay.num_threads()
    process = _spawn("relay", url, folder, "--seats", str(seats), "--calls", str(calls))
    assert process.stdout is not None and process.stdin is not None
    opened = json.loads(process.stdout.readline())["opened"]
    grown_rss, grown_threads = relay.memory_info().rss - rss, relay.num_threads() - threads
    result = _together([process], folder)[0][0]
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
    parser.add_argument("--split-cores", action="store_true", help="the Server's side on one core, the callers' on another")
    parser.add_argument("--callers-nice", type=int, default=0, metavar="N",
                        help="the callers' side at niceness N: the Server's side has the cores first")  # fmt: skip
    args = parser.parse_args(argv)
    global _callers_nice
    _callers_nice = args.callers_nice
    if args.split_cores:
        global _callers_core
        if len(os.sched_getaffinity(0)) < 2:
            parser.error("--split-cores needs two cores this process may run on")
        server_core, _callers_core = sorted(os.sched_getaffinity(0))[:2]
        os.sched_setaffinity(0, {server_core})  # before the Computers start their MCP servers
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
            _print_pairs(results[PATHS[-2][0]], results[PATHS[-1][0]])
            _print_seats(_seats(url, folder, seats, 1 if args.quick else 5))
        subprocess.run([sys.executable, "-c", "from smcp_sync.cli import main; main()", "agent-relay", "--folder", folder, "--stop"],
                       check=False, timeout=120)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)  # the stopped relay's folder


def _print_calls(results: dict[str, list[dict[str, Any]]]) -> None:
    print("### relay: a call through the relay against a direct Agent (ms, calls/s; median of the rounds)\n")
    print("| path | rounds | calls per round | p50 | p99 | calls/s | CPU per call (ms) |\n|---|---|---|---|---|---|---|")
    for label, rounds in results.items():
        p50, p99, rate, cpu = (
            statistics.median(r[key] for r in rounds) for key in ("p50_ms", "p99_ms", "calls_per_s", "cpu_ms_per_call")
        )
        print(f"| {label} | {len(rounds)} | {rounds[0]['n']} | {p50:.2f} | {p99:.2f} | {rate:.0f} | {cpu:.2f} |")
    print(flush=True)


def _print_pairs(direct: list[dict[str, Any]], relay: list[dict[str, Any]]) -> None:
    """The 16-caller rounds side by side: what the issue's goals compare, within each
    round, and where each path's CPU went (ms per call: Server and Computers, MCP
    servers, callers, relay)."""
    print("### relay: 16 callers, each round's pair (relay = 4 processes x 4 threads, one seat)\n")
    print("| round | calls/s direct / relay | ratio | p50 direct / relay (ms) | p50 relay - direct (ms) "
          "| CPU per call direct / relay (ms) | direct: Server+Computers, MCP, callers "
          "| relay: Server+Computers, MCP, callers, relay |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for n, (d, r) in enumerate(zip(direct, relay), 1):
        print(f"| {n} | {d['calls_per_s']:.0f} / {r['calls_per_s']:.0f} | {r['calls_per_s'] / d['calls_per_s']:.2f} "
              f"| {d['p50_ms']:.2f} / {r['p50_ms']:.2f} | {r['p50_ms'] - d['p50_ms']:+.2f} "
              f"| {d['cpu_ms_per_call']:.2f} / {r['cpu_ms_per_call']:.2f} | {_parts(d, CPU_PARTS[:3])} "
              f"| {_parts(r, CPU_PARTS)} |")  # fmt: skip
    ratios = [r["calls_per_s"] / d["calls_per_s"] for d, r in zip(direct, relay)]
    gaps = [r["p50_ms"] - d["p50_ms"] for d, r in zip(direct, relay)]
    print(f"| median | | {statistics.median(ratios):.2f} | | {statistics.median(gaps):+.2f} | | | |")
    print(flush=True)


def _parts(row: dict[str, Any], parts: tuple[str, ...]) -> str:
    return ", ".join(f"{row[f'cpu_ms_{part}']:.2f}" for part in parts)


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
        parser.add_argument("--core", type=int, default=None)
        parser.add_argument("--nice", type=int, default=0)
        caller(parser.parse_args(sys.argv[2:]))
    else:
        main()
