"""What an idle connected client costs the Server: RSS, threads and file descriptors.

The Server runs alone in its process; the clients (our Agents, each joined to its own
office, then idle) run in other processes, at most `CLIENTS_PER_PROCESS` per process, so
the Server's numbers are its own. Levels are cumulative (10, then 90 more, ...): RSS is
read after each level settles and compared with the Server's idle baseline. Python
rarely returns freed memory to the system, so cumulative growth is the honest figure.

File descriptors: each client holds one socket on each side; the soft `ulimit -n` of
this process (inherited by the children) is raised to its hard limit when it is too low
for the largest level.
"""

from __future__ import annotations

import resource
import time
from typing import Any

import psutil

from .processes import Peers

CLIENTS_PER_PROCESS = 100
#: Seconds one batch of clients may take to connect and join.
CONNECT_TIMEOUT = 120.0
#: The Server counts as settled when its thread count held still this long.
SETTLE_QUIET = 0.5
SETTLE_TIMEOUT = 10.0
#: File descriptors needed per client across the processes, plus slack.
FDS_PER_CLIENT = 4


def raise_fd_limit(clients: int) -> tuple[int, int]:
    """Make sure the soft RLIMIT_NOFILE covers `clients`; returns the (soft, hard) in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = clients * FDS_PER_CLIENT + 1024
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new_soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def sample(proc: psutil.Process) -> dict[str, float]:
    with proc.oneshot():
        return {"rss_mb": proc.memory_info().rss / 2**20, "threads": proc.num_threads(), "fds": proc.num_fds()}


def settled(proc: psutil.Process) -> dict[str, float]:
    """Sample once the thread count has not moved for `SETTLE_QUIET` s (bounded): a
    process of someone else's has no event to wait on, so this polls."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last = sample(proc)
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = sample(proc)
        if now["threads"] != last["threads"]:
            still_since = time.monotonic()
        last = now
        if time.monotonic() - still_since >= SETTLE_QUIET:
            break
    return last


def idle_clients(levels: tuple[int, ...]) -> dict[str, Any]:
    """Server RSS / threads / fds at each level of idle connected clients."""
    limit = raise_fd_limit(max(levels))
    with Peers() as peers:
        ready = peers.start("smcp-server")
        server = psutil.Process(ready["pid"])
        baseline = settled(server)
        rows = []
        connected = 0
        for level in sorted(levels):
            while connected < level:
                batch = min(CLIENTS_PER_PROCESS, level - connected)
                prefix = f"idle{connected}"
                peers.start(
                    "idle-agents",
                    "--url",
                    ready["url"],
                    "--count",
                    str(batch),
                    "--prefix",
                    prefix,
                    timeout=CONNECT_TIMEOUT,
                )
                connected += batch
            now = settled(server)
            per_client = {f"{key}_per_client": (now[key] - baseline[key]) / level for key in now}
            rows.append({"clients": level, **now, **per_client})
    return {"baseline": baseline, "levels": rows, "fd_limit": list(limit)}
