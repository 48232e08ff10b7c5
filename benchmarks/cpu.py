"""CPU seconds spent by this process and its descendants over a window.

Why: on a shared 2-core machine wall-clock latency moves with everybody else's load,
while the CPU a stack burns per call is its own. `CpuWindow` sums user+system time of
this process and every live descendant (Server, Computer and MCP server children);
processes that end inside the window take their time with them, so a short-lived child
(the official driver) reports its own.
"""

from __future__ import annotations

import time

import psutil


def _descendants_cpu() -> dict[int, float]:
    seconds: dict[int, float] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        seconds[proc.pid] = times.user + times.system
    return seconds


class CpuWindow:
    """``with CpuWindow() as cpu: ...`` then ``cpu.seconds``."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> CpuWindow:
        self._own = time.process_time()
        self._children = _descendants_cpu()
        return self

    def __exit__(self, *exc_info: object) -> None:
        after = _descendants_cpu()
        children = sum(spent - self._children.get(pid, 0.0) for pid, spent in after.items())
        self.seconds = time.process_time() - self._own + children
