"""What observing costs a tool call end to end: the Server's metrics (and audit trail)
and OpenTelemetry tracing in every process, on against off (issue 34's goal: metrics and
tracing on at most 5 % slower).

    python -m benchmarks.observability [--rounds 4] [--calls 300] [--on metrics+tracing|metrics|tracing|metrics+audit]

Each round starts, for each of *off* and *on* in turn (the order alternating by round):
a Server process (`peers smcp-server --observability ...`: off is nothing observed, not
even the routing spans' check), a Computer process with the test tool server, and two
caller processes in turn (`peers callers`): one thread making `--calls` calls (p50,
p99), then 16 threads making `--calls` / 4 each (calls/s, p50). Where *on* traces, all
three processes set OpenTelemetry's SDK (`peers --tracing`: spans batched and dropped),
so each call is one trace: the Agent's, the Server's and the Computer's spans and the
MCP SDK's own. The Server's and the Computer's CPU per call are read with psutil over
the 16-caller phase. Ratios are paired within a round (on ÷ off), then the median over
the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

import psutil

from .echo import TOOL_SERVER, EchoServer
from .loadgen import summarize
from .processes import Peers

OFFICE = "bench-observability"
COMPUTER = "bench-c"
#: Seconds one caller process may take for all its calls.
CALLS_TIMEOUT = 600.0


#: What `--on` turns on: the Server's `--observability` (`peers`), and whether every
#: process traces. The first is issue 34's goal: metrics and tracing.
ON = {
    "metrics+tracing": ("metrics,tracing", True),
    "metrics": ("metrics", False),
    "tracing": ("tracing", True),
    "metrics+audit": ("metrics,audit", False),
}
OFF = ("off", False)


def measure(server_observes: str, traced: bool, calls: int) -> dict[str, float]:
    """One side of a round: its Server, Computer and callers, stopped after."""
    tracing = ("--tracing",) if traced else ()
    echo = EchoServer((sys.executable, str(TOOL_SERVER)), "tool_server.py")
    with Peers() as peers:
        server = peers.start("smcp-server", "--observability", server_observes, *tracing)
        computer = peers.computer(server["url"], OFFICE, COMPUTER, echo.config())
        computer_process = psutil.Process(computer["pid"])
        server_process = psutil.Process(server["pid"])

        def run(threads: int, each: int) -> dict[str, Any]:
            argv = [sys.executable, "-m", "benchmarks.peers", "callers", "--url", server["url"], "--office", OFFICE,
                    "--computer", COMPUTER, "--threads", str(threads), "--calls", str(each), *tracing]  # fmt: skip
            callers = peers.spawn(argv, f"callers-{threads}")
            callers.wait_for("ready", 60)
            before = _cpu(server_process), _cpu(computer_process)
            done = callers.wait_for("done", CALLS_TIMEOUT)
            after = _cpu(server_process), _cpu(computer_process)
            latencies = done["latencies"]
            cpu_ms = [(end - start) * 1e3 / len(latencies) for start, end in zip(before, after)]
            return {**summarize(latencies), "calls_per_s": len(latencies) / done["seconds"], "cpu_ms": cpu_ms}

        one = run(1, calls)
        many = run(16, max(1, calls // 4))
    return {
        "p50_1": one["p50_ms"],
        "p99_1": one["p99_ms"],
        "p50_16": many["p50_ms"],
        "calls_per_s_16": many["calls_per_s"],
        "server_cpu_ms": many["cpu_ms"][0],
        "computer_cpu_ms": many["cpu_ms"][1],
    }


def _cpu(process: psutil.Process) -> float:
    """CPU seconds of `process` and its children (the Computer's MCP server)."""
    times = process.cpu_times()
    children = [child.cpu_times() for child in process.children(recursive=True)]
    return times.user + times.system + sum(child.user + child.system for child in children)


FIGURES = {
    "p50_1": "p50, 1 caller (ms)",
    "p99_1": "p99, 1 caller (ms)",
    "p50_16": "p50, 16 callers (ms)",
    "calls_per_s_16": "calls/s, 16 callers",
    "server_cpu_ms": "Server CPU per call, 16 callers (ms)",
    "computer_cpu_ms": "Computer CPU per call with its MCP server, 16 callers (ms)",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300, help="calls of the one caller; 16 callers make a quarter each")
    parser.add_argument("--on", choices=tuple(ON), default="metrics+tracing", help="what the 'on' side observes")
    args = parser.parse_args(argv)
    sides = {"off": OFF, "on": ON[args.on]}
    rounds: list[dict[str, dict[str, float]]] = []
    for index in range(args.rounds):
        order = ("off", "on") if index % 2 == 0 else ("on", "off")  # the machine's drift hits both alike
        rounds.append({side: measure(*sides[side], args.calls) for side in order})
    load = psutil.getloadavg()[0]
    print(f"### observability: {args.on} on against off ({args.rounds} rounds, 1-min load {load:.1f})\n")
    print("| figure | off (median) | on (median) | on ÷ off (paired, median) | on ÷ off per round |")
    print("|---|---|---|---|---|")
    for key, label in FIGURES.items():
        off = statistics.median(r["off"][key] for r in rounds)
        on = statistics.median(r["on"][key] for r in rounds)
        ratios = [r["on"][key] / r["off"][key] for r in rounds]
        each = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(f"| {label} | {off:.2f} | {on:.2f} | {statistics.median(ratios):.3f} | {each} |")


if __name__ == "__main__":
    main()
