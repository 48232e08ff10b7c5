"""Run the smcp_sync benchmarks on loopback and print Markdown tables.

From the repository root (the dev virtualenv: smcp_sync installed, plus psutil)::

    python -m benchmarks                      # everything: ~7 minutes on 2 cores
    python -m benchmarks --only tool_call,floors
    python -m benchmarks --quick              # tiny counts: checks the script works
    python -m benchmarks --only finder --finder-docs 10000   # 10 x 10,000 documents
    python -m benchmarks --only scale_out     # opt-in: needs a redis-server binary
    python -m benchmarks --only capacity      # opt-in: 1,000 to 10,000 idle connections, ~15 minutes
    python -m benchmarks --only operations    # opt-in: the Server's metrics and audit trail, on against off
    python -m benchmarks --json out.json --markdown out.md

Sections: see `SECTIONS`. The official SDK section builds (once) or reuses a virtualenv
per SDK version (tests/interop/venv.py). A section that fails is reported and the exit
status is 1; the others still run. Progress goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from tests.interop.venv import CURRENT, LEGACY, official_sdk_python

from . import arguments, capacity, echo, finder, hostile, loadgen, memory, paths, redis_recovery, report, roundtrip, scale_out

log = logging.getLogger("benchmarks")

#: Per round and path; FULL_ROUNDS / QUICK_ROUNDS rounds (roundtrip.py says why rounds).
FULL_PLAN = loadgen.LoadPlan()
QUICK_PLAN = loadgen.LoadPlan(
    warmup=3, sequential_calls=20, sequential_budget=3.0, concurrent_calls=30, concurrent_budget=1.0
)
FULL_ROUNDS, QUICK_ROUNDS = 5, 2
FULL_MEMORY_LEVELS = (10, 100, 300)
QUICK_MEMORY_LEVELS = (2, 5)
FULL_FINDER = finder.FinderPlan()
QUICK_FINDER = finder.FinderPlan(
    servers=2, documents=50, warm_calls=5, storm_count=50, storm_seconds=0.2, update_rate=20.0, update_seconds=1.0
)
FULL_HOSTILE = hostile.HostilePlan()
#: Short deadlines and a small backlog, so the quick run does not wait out the defaults.
QUICK_HOSTILE = hostile.HostilePlan(
    hostile=10,
    hold_samples=2,
    floods=1,
    calls=40,
    threads=10,
    more_threads=20,
    server_options={"handshake_timeout": 1.0, "header_timeout": 1.0, "max_send_backlog": 1024 * 1024},
)
FULL_CAPACITY = capacity.CapacityPlan()
QUICK_CAPACITY = capacity.CapacityPlan(levels=(20,), unloaded_seconds=0.5, probe_seconds=0.5)

#: Round-trip sections and the paths they measure (all measured together, in rounds).
ROUND_TRIP_PATHS = {
    "floors": ("mcp_direct", "raw_socketio", "local_computer"),
    "tool_call": ("smcp_sync",),
    "official": ("official", "official_042"),
    "scale_out": ("redis_same_node", "redis_cross_node"),
    "operations": ("ops_off", "ops_on"),
}
FINDER_SECTIONS = ("finder", "storm", "updates")
SECTIONS = (*ROUND_TRIP_PATHS, *FINDER_SECTIONS, "memory", "hostile", "capacity")
#: Run without --only: scale_out is left out (it needs a redis-server binary), capacity
#: (thousands of connections for a quarter of an hour), and operations (one question:
#: what the Server's metrics and audit trail cost).
DEFAULT_SECTIONS = tuple(section for section in SECTIONS if section not in ("scale_out", "capacity", "operations"))


class Run:
    """Settings and results of one invocation."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.sections = args.only
        self.plan = QUICK_PLAN if args.quick else FULL_PLAN
        if args.levels:
            self.plan = dataclasses.replace(self.plan, levels=args.levels)
        self.rounds = args.rounds or (QUICK_ROUNDS if args.quick else FULL_ROUNDS)
        self.memory_levels = args.memory_levels or (QUICK_MEMORY_LEVELS if args.quick else FULL_MEMORY_LEVELS)
        # Each builds or checks its SDK version's venv, once.
        self.official_python = functools.cache(functools.partial(official_sdk_python, LEGACY))
        self.current_official_python = functools.cache(functools.partial(official_sdk_python, CURRENT))
        choice = args.echo
        if choice == "auto":
            choice = "official" if "official" in self.sections else "tool-server"
        wants_echo = any(section in self.sections for section in ROUND_TRIP_PATHS)
        self.echo = echo.choose(choice, args.echo_command, self.official_python) if wants_echo else None
        self.outcomes: dict[str, list[dict[str, Any]]] = {}
        self.finder_plan = QUICK_FINDER if args.quick else FULL_FINDER
        if args.finder_docs:
            self.finder_plan = dataclasses.replace(self.finder_plan, documents=args.finder_docs)
        self.finder_results: dict[str, Any] | None = None
        self.memory_results: dict[str, Any] | None = None
        self.hostile_plan = QUICK_HOSTILE if args.quick else FULL_HOSTILE
        self.hostile_results: dict[str, Any] | None = None
        self.capacity_plan = QUICK_CAPACITY if args.quick else FULL_CAPACITY
        if args.capacity_levels:
            self.capacity_plan = dataclasses.replace(self.capacity_plan, levels=args.capacity_levels)
        if args.capacity_servers:
            self.capacity_plan = dataclasses.replace(self.capacity_plan, servers=args.capacity_servers)
        self.capacity_results: dict[str, Any] | None = None
        self.registry_results: list[dict[str, Any]] | None = None
        self.failover_results: list[float] | None = None
        self.recovery_results: list[dict[str, Any]] | None = None
        self.sentinel_results: list[float] | None = None
        self.quick = args.quick
        self.loads: dict[str, tuple[list[float], list[float]]] = {}
        self.failures: dict[str, str] = {}

    def _path_factories(self) -> dict[str, roundtrip.PathFactory]:
        factories = {
            "mcp_direct": lambda: paths.mcp_direct(self.echo),
            "raw_socketio": paths.raw_socketio,
            "local_computer": lambda: paths.local_computer(self.echo),
            "smcp_sync": lambda: paths.smcp_sync(self.echo),
            "official": lambda: paths.official(self.echo, self.official_python, LEGACY),
            "official_042": lambda: paths.official(self.echo, self.current_official_python, CURRENT),
            "redis_same_node": lambda: scale_out.node_path(self.echo, cross=False),
            "redis_cross_node": lambda: scale_out.node_path(self.echo, cross=True),
            "ops_off": lambda: paths.smcp_sync(self.echo, observability="off"),
            "ops_on": lambda: paths.smcp_sync(self.echo, observability="on"),
        }
        wanted = [key for section in ROUND_TRIP_PATHS if section in self.sections for key in ROUND_TRIP_PATHS[section]]
        return {key: factories[key] for key in wanted}

    def round_trips(self) -> None:
        self.outcomes, failures = roundtrip.run_rounds(self._path_factories(), self.plan, self.rounds)
        self.failures.update(failures)

    def finder_section(self) -> None:
        self.finder_results = finder.run(
            self.finder_plan,
            catalogue="finder" in self.sections,
            storm="storm" in self.sections,
            updates="updates" in self.sections,
        )

    def memory_section(self) -> None:
        self.memory_results = memory.idle_clients(self.memory_levels)

    def hostile_section(self) -> None:
        self.hostile_results = hostile.run(self.hostile_plan)

    def capacity_section(self) -> None:
        self.capacity_results = capacity.run(self.capacity_plan, self.current_official_python, log)

    def registry_section(self) -> None:
        self.registry_results = scale_out.registry_operations(self.quick)

    def failover_section(self) -> None:
        self.failover_results = scale_out.failover(self.quick)

    def recovery_section(self) -> None:
        self.recovery_results = redis_recovery.recovery(self.quick)

    def sentinel_section(self) -> None:
        self.sentinel_results = redis_recovery.sentinel_failover(self.quick)

    def run(self) -> None:
        steps: list[tuple[str, Callable[[], None]]] = []
        if self.echo is not None:
            steps.append(("round trips", self.round_trips))
        if any(section in self.sections for section in FINDER_SECTIONS):
            steps.append(("finder", self.finder_section))
        if "memory" in self.sections:
            steps.append(("memory", self.memory_section))
        if "hostile" in self.sections:
            steps.append(("hostile", self.hostile_section))
        if "capacity" in self.sections:
            steps.append(("capacity", self.capacity_section))
        if "scale_out" in self.sections:
            steps.append(("registry", self.registry_section))
            steps.append(("failover", self.failover_section))
            steps.append(("recovery", self.recovery_section))
            steps.append(("sentinel failover", self.sentinel_section))
        for name, step in steps:
            log.info("%s ...", name)
            before, started = list(os.getloadavg()), time.monotonic()
            try:
                step()
            except Exception as exc:
                log.exception("%s failed", name)
                self.failures[name] = f"{type(exc).__name__}: {exc}"
            self.loads[name] = (before, list(os.getloadavg()))
            log.info("%s done in %.1f s", name, time.monotonic() - started)

    # -- output -------------------------------------------------------------------------------

    def summaries(self) -> dict[str, dict[str, Any]]:
        return {key: roundtrip.summary(runs) for key, runs in self.outcomes.items()}

    def tables(self) -> list[report.Table]:
        tables = []
        if self.outcomes:
            tables.append(report.paths_table(self.summaries(), self.plan.levels))
            tables.append(report.ratios_table(roundtrip.ratios(self.outcomes, self.plan.levels)))
        if self.finder_results is not None:
            tables += report.finder_tables(self.finder_results)
        if self.memory_results is not None:
            tables.append(report.memory_table(self.memory_results))
        if self.hostile_results is not None:
            tables += report.hostile_tables(self.hostile_results)
        if self.capacity_results is not None:
            tables.append(report.capacity_table(self.capacity_results, capacity.LABELS))
        if self.registry_results is not None:
            tables.append(report.registry_table(self.registry_results))
        if self.failover_results is not None:
            tables.append(report.failover_table(self.failover_results))
        if self.recovery_results is not None:
            tables.append(report.recovery_table(self.recovery_results))
        if self.sentinel_results is not None:
            tables.append(report.sentinel_table(self.sentinel_results))
        tables.append(report.load_note(self.loads))
        return tables

    def markdown(self, info: dict[str, Any]) -> str:
        echo_label = self.echo.label if self.echo is not None else None
        parts = [report.header(info, echo_label, {**self.plan.to_dict(), "rounds": self.rounds})]
        parts += [table.markdown() for table in self.tables()]
        parts += [f"**{name} failed**: {error}\n" for name, error in self.failures.items()]
        return "\n".join(parts)

    def results(self, info: dict[str, Any]) -> dict[str, Any]:
        return {
            "machine": info,
            "echo_server": self.echo.label if self.echo is not None else None,
            "plan": self.plan.to_dict(),
            "rounds": self.rounds,
            "summaries": self.summaries(),
            "ratios": roundtrip.ratios(self.outcomes, self.plan.levels),
            "outcomes": self.outcomes,
            "finder": self.finder_results,
            "memory": self.memory_results,
            "hostile": {"plan": self.hostile_plan.to_dict(), **(self.hostile_results or {})},
            "capacity": self.capacity_results,
            "registry": self.registry_results,
            "failover": self.failover_results,
            "recovery": self.recovery_results,
            "sentinel_failover": self.sentinel_results,
            "load": self.loads,
            "failures": self.failures,
        }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        type=arguments.names(SECTIONS, "sections"),
        default=DEFAULT_SECTIONS,
        help=f"comma-separated sections ({','.join(SECTIONS)}; default: all but scale_out)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test); numbers are meaningless")
    parser.add_argument("--levels", type=arguments.counts, help="concurrent callers per throughput run (default 1,4,16)")
    parser.add_argument(
        "--rounds", type=arguments.positive, help=f"interleaved rounds of the round-trip paths (default {FULL_ROUNDS})"
    )
    parser.add_argument("--memory-levels", type=arguments.counts, help="idle clients per memory sample (default 10,100,300)")
    parser.add_argument(
        "--capacity-servers",
        type=arguments.names(capacity.SERVERS, "capacity servers"),
        help=f"servers of the capacity section ({','.join(capacity.SERVERS)}; default: all)",
    )
    parser.add_argument(
        "--capacity-levels",
        type=arguments.counts,
        help=f"idle connections per capacity point (default {','.join(map(str, FULL_CAPACITY.levels))})",
    )
    parser.add_argument(
        "--finder-docs", type=arguments.positive, help=f"documents per MCP server of the Finder sections (default {FULL_FINDER.documents})"
    )
    parser.add_argument(
        "--echo", choices=echo.CHOICES, default="auto", help="the MCP echo server (see benchmarks/echo.py)"
    )
    parser.add_argument("--echo-command", help="command line of another stdio MCP server with an echo(text) tool")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--markdown", help="also write the report to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    logging.getLogger("benchmarks").setLevel(logging.INFO)
    run = Run(args)
    run.run()
    info = report.machine()
    text = run.markdown(info)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(run.results(info), out, indent=2)
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
