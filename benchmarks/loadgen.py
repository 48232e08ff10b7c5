"""Timing loops: sequential latency and throughput at N concurrent callers.

Standard library only, because the official SDK's driver (`official_driver.py`, run by
another virtualenv's python) imports it too: both stacks are then measured by the same
loop, with the same percentile rule. Every loop is bounded twice, by a number of calls
and by a time budget, so a slow or stuck peer cannot make a run endless (each call
carries its own timeout as well).

`call()` performs one request and raises when the answer is wrong; raised calls count
as errors and are left out of the latencies.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

#: Extra seconds a caller thread may take past the budget (its call's own timeout).
JOIN_GRACE = 30.0


@dataclass(frozen=True)
class LoadPlan:
    """How much load one path gets; `levels` are the numbers of concurrent callers."""

    warmup: int = 30
    sequential_calls: int = 300
    sequential_budget: float = 5.0
    concurrent_calls: int = 1000
    concurrent_budget: float = 3.0
    levels: tuple[int, ...] = (1, 4, 16)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadPlan:
        return cls(**{**data, "levels": tuple(data["levels"])})


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (`q` in 0..100) of an ascending list."""
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(latencies: list[float]) -> dict[str, Any]:
    """Milliseconds: p50, p99, mean (None when nothing succeeded)."""
    ordered = sorted(latencies)
    if not ordered:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "mean_ms": None}
    return {
        "n": len(ordered),
        "p50_ms": percentile(ordered, 50) * 1e3,
        "p99_ms": percentile(ordered, 99) * 1e3,
        "mean_ms": sum(ordered) / len(ordered) * 1e3,
    }


class _Recorder:
    """Shared by the callers of one loop: hands out tickets, collects outcomes."""

    def __init__(self, calls: int, budget: float) -> None:
        self._tickets = itertools.count()
        self._calls = calls
        self._lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors = 0
        self.first_error: str | None = None
        self.started = self.finished = time.perf_counter()
        self.deadline = self.started + budget

    def take(self) -> bool:
        return next(self._tickets) < self._calls and time.perf_counter() < self.deadline

    def succeeded(self, began: float) -> None:
        now = time.perf_counter()
        with self._lock:
            self.latencies.append(now - began)
            self.finished = max(self.finished, now)

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self.errors += 1
            self.finished = max(self.finished, time.perf_counter())
            if self.first_error is None:
                self.first_error = f"{type(exc).__name__}: {exc}"[:300]

    def result(self, callers: int) -> dict[str, Any]:
        elapsed = max(self.finished - self.started, 1e-9)
        return {
            **summarize(self.latencies),
            "callers": callers,
            "errors": self.errors,
            "first_error": self.first_error,
            "elapsed_s": elapsed,
            "calls_per_s": len(self.latencies) / elapsed,
        }


# -- threads ------------------------------------------------------------------------------


def _run_calls(call: Callable[[], Any], recorder: _Recorder) -> None:
    while recorder.take():
        began = time.perf_counter()
        try:
            call()
        except Exception as exc:
            recorder.failed(exc)
        else:
            recorder.succeeded(began)


def sequential(call: Callable[[], Any], calls: int, budget: float) -> dict[str, Any]:
    """One call after the other, in this thread."""
    recorder = _Recorder(calls, budget)
    _run_calls(call, recorder)
    return recorder.result(1)


def concurrent(call: Callable[[], Any], callers: int, calls: int, budget: float) -> dict[str, Any]:
    """`callers` threads share `calls` calls; calls/s over the wall time of the whole."""
    recorder = _Recorder(calls, budget)
    threads = [
        threading.Thread(target=_run_calls, args=(call, recorder), name=f"bench-caller-{i}", daemon=True)
        for i in range(callers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, recorder.deadline + JOIN_GRACE - time.perf_counter()))
    stuck = sum(thread.is_alive() for thread in threads)
    if stuck:
        raise TimeoutError(f"{stuck} caller threads still running {JOIN_GRACE}s past the budget")
    return recorder.result(callers)


def measure(call: Callable[[], Any], plan: LoadPlan) -> dict[str, Any]:
    """Warm up, then the sequential latency and one throughput run per level."""
    warm = sequential(call, plan.warmup, plan.sequential_budget)
    if plan.warmup and warm["errors"]:
        raise RuntimeError(f"warm-up calls failed: {warm['first_error']}")
    return {
        "warmup": warm,
        "sequential": sequential(call, plan.sequential_calls, plan.sequential_budget),
        "concurrent": [concurrent(call, n, plan.concurrent_calls, plan.concurrent_budget) for n in plan.levels],
    }


def calls_made(outcome: dict[str, Any]) -> int:
    """Every call of a `measure` outcome, warm-up and failures included."""
    runs = [outcome["warmup"], outcome["sequential"], *outcome["concurrent"]]
    return sum(run["n"] + run["errors"] for run in runs)


# -- asyncio tasks (for callers that are coroutines: the mcp SDK) ------------------------


async def _run_calls_async(call: Callable[[], Awaitable[Any]], recorder: _Recorder) -> None:
    while recorder.take():
        began = time.perf_counter()
        try:
            await call()
        except Exception as exc:
            recorder.failed(exc)
        else:
            recorder.succeeded(began)


async def concurrent_async(
    call: Callable[[], Awaitable[Any]], callers: int, calls: int, budget: float
) -> dict[str, Any]:
    recorder = _Recorder(calls, budget)
    await asyncio.wait_for(
        asyncio.gather(*(_run_calls_async(call, recorder) for _ in range(callers))), budget + JOIN_GRACE
    )
    return recorder.result(callers)


async def measure_async(call: Callable[[], Awaitable[Any]], plan: LoadPlan) -> dict[str, Any]:
    """`measure` for a coroutine: concurrency is N tasks on one loop."""
    warm = await concurrent_async(call, 1, plan.warmup, plan.sequential_budget)
    if plan.warmup and warm["errors"]:
        raise RuntimeError(f"warm-up calls failed: {warm['first_error']}")
    return {
        "warmup": warm,
        "sequential": await concurrent_async(call, 1, plan.sequential_calls, plan.sequential_budget),
        "concurrent": [
            await concurrent_async(call, n, plan.concurrent_calls, plan.concurrent_budget) for n in plan.levels
        ],
    }
