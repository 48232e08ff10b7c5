"""Interleaved rounds over the round-trip paths, and the numbers drawn from them.

Why rounds: the machine is shared (2 cores, other people's test runs), and its load
drifts by the minute. Every selected path is set up once, then measured in `rounds`
short rounds, one path after the other with the order rotated each round, so each
comparison is between measurements taken side by side. Per path, a figure is the median
of its per-round values; a ratio is the median of the per-round ratios (paired), never
a ratio of numbers taken minutes apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import statistics
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from . import loadgen
from .paths import Measure, Outcome

log = logging.getLogger(__name__)

#: Warm-up calls of every round after the first (the stack is already warm).
REWARM_CALLS = 5

PathFactory = Callable[[], AbstractContextManager[Measure]]


def run_rounds(
    factories: dict[str, PathFactory], plan: loadgen.LoadPlan, rounds: int
) -> tuple[dict[str, list[Outcome]], dict[str, str]]:
    """Outcomes per path (one per round) and, per failed path, what went wrong. A path
    that fails to start or to measure is dropped; the others go on."""
    outcomes: dict[str, list[Outcome]] = {key: [] for key in factories}
    failures: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        measures: dict[str, Measure] = {}
        for key, factory in factories.items():
            log.info("setting up %s", key)
            try:
                measures[key] = stack.enter_context(factory())
            except Exception as exc:
                log.exception("path %s did not start", key)
                failures[key] = f"{type(exc).__name__}: {exc}"
        for index in range(rounds):
            round_plan = plan if index == 0 else dataclasses.replace(plan, warmup=min(plan.warmup, REWARM_CALLS))
            keys = list(measures)
            shift = index % len(keys) if keys else 0
            for key in keys[shift:] + keys[:shift]:
                if key in failures:
                    continue
                log.info("round %d/%d: %s", index + 1, rounds, key)
                try:
                    outcomes[key].append(measures[key](round_plan))
                except Exception as exc:
                    log.exception("path %s failed in round %d", key, index + 1)
                    failures[key] = f"{type(exc).__name__}: {exc}"
    return {key: runs for key, runs in outcomes.items() if runs}, failures


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def summary(runs: list[Outcome]) -> dict[str, Any]:
    """One path's figures: medians over rounds; counts and CPU over all rounds."""
    sequential = [run["sequential"] for run in runs]
    levels = []
    for index, callers in enumerate(run["callers"] for run in runs[0]["concurrent"]):
        at_level = [run["concurrent"][index] for run in runs]
        levels.append(
            {
                "callers": callers,
                "calls_per_s": _median([r["calls_per_s"] for r in at_level]),
                "p50_ms": _median([r["p50_ms"] for r in at_level]),
                "p99_ms": _median([r["p99_ms"] for r in at_level]),
            }
        )
    measured = [run["sequential"] for run in runs] + [level for run in runs for level in run["concurrent"]]
    return {
        "rounds": len(runs),
        "calls": sum(r["n"] for r in measured),
        "errors": sum(r["errors"] for r in measured) + sum(run["warmup"]["errors"] for run in runs),
        "p50_ms": _median([s["p50_ms"] for s in sequential]),
        "p99_ms": _median([s["p99_ms"] for s in sequential]),
        "calls_per_s": _median([s["calls_per_s"] for s in sequential]),
        "levels": levels,
        "cpu_ms_per_call": sum(run["cpu_s"] for run in runs)
        * 1e3
        / max(1, sum(loadgen.calls_made(run) for run in runs)),
    }


def _paired(
    outcomes: dict[str, list[Outcome]], keys: Sequence[str], formula: Callable[..., float | None]
) -> float | None:
    """Median over the rounds all `keys` completed of `formula(outcome per key...)`."""
    if not all(key in outcomes for key in keys):
        return None
    rounds = min(len(outcomes[key]) for key in keys)
    values = []
    for index in range(rounds):
        try:
            values.append(formula(*(outcomes[key][index] for key in keys)))
        except (TypeError, ZeroDivisionError):  # a phase without any successful call
            continue
    return _median(values)


#: The official stacks compared with ours, and their names in the ratios.
OFFICIAL_STACKS = {"official": "official 0.1.6", "official_042": "official 0.4.2"}


def ratios(outcomes: dict[str, list[Outcome]], levels: Sequence[int]) -> list[tuple[str, float | None, str]]:
    """(comparison, paired ratio, how to read it) for the comparisons the issue asks for;
    those whose paths were not measured are left out."""
    p50 = lambda run: run["sequential"]["p50_ms"]  # noqa: E731
    cpu = lambda run: run["cpu_s"] / loadgen.calls_made(run)  # noqa: E731
    rows = []
    for stack, name in {"smcp_sync": "smcp_sync", **OFFICIAL_STACKS}.items():
        value = _paired(outcomes, (stack, "mcp_direct", "raw_socketio"), lambda s, d, r: (p50(s) - p50(d)) / p50(r))
        rows.append((f"{name}: (tool_call p50 − direct MCP p50) / raw socket.io p50", value, "goal ≤ ~2 (two hops)"))
    for official, name in OFFICIAL_STACKS.items():
        pair = (official, "smcp_sync")
        rows.append(
            (f"{name} p50 / smcp_sync p50", _paired(outcomes, pair, lambda o, s: p50(o) / p50(s)), "> 1: ours is faster")
        )
        for index, callers in enumerate(levels):
            value = _paired(
                outcomes,
                pair,
                lambda o, s, i=index: s["concurrent"][i]["calls_per_s"] / o["concurrent"][i]["calls_per_s"],
            )
            rows.append((f"smcp_sync / {name} calls/s, {callers} callers", value, "> 1: ours is faster"))
    scale_out = ("redis_cross_node", "redis_same_node")
    if all(key in outcomes for key in scale_out):
        rows.append(
            ("scale-out p50: across nodes / same node", _paired(outcomes, scale_out, lambda c, s: p50(c) / p50(s)), "the Redis hop")
        )
        for index, callers in enumerate(levels):
            value = _paired(
                outcomes, scale_out, lambda c, s, i=index: c["concurrent"][i]["calls_per_s"] / s["concurrent"][i]["calls_per_s"]
            )
            rows.append((f"scale-out calls/s, {callers} callers: across nodes / same node", value, "< 1: the Redis hop"))
        no_redis = ("redis_same_node", "smcp_sync")
        rows.append(
            ("scale-out same node p50 / one Server p50", _paired(outcomes, no_redis, lambda r, o: p50(r) / p50(o)), "the Redis channel on one node")
        )
    operations = ("ops_on", "ops_off")
    if all(key in outcomes for key in operations):
        rows.append(("operations p50: on / off", _paired(outcomes, operations, lambda n, f: p50(n) / p50(f)), "goal ≤ 1.05"))
        for index, callers in enumerate(levels):
            value = _paired(
                outcomes, operations, lambda n, f, i=index: f["concurrent"][i]["calls_per_s"] / n["concurrent"][i]["calls_per_s"]
            )
            rows.append((f"operations calls/s, {callers} callers: off / on", value, "goal ≤ 1.05"))
        rows.append(("operations CPU per call: on / off", _paired(outcomes, operations, lambda n, f: cpu(n) / cpu(f)), "the cost"))
    for official, name in OFFICIAL_STACKS.items():
        value = _paired(outcomes, (official, "smcp_sync"), lambda o, s: cpu(o) / cpu(s))
        rows.append((f"{name} / smcp_sync CPU per call", value, "> 1: ours is cheaper"))
    return [row for row in rows if row[1] is not None]
