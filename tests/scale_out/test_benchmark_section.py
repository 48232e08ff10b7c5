"""The benchmark's opt-in ``scale_out`` section runs (``--quick``): both scale-out paths
answer every call, the ratios and the registry table hold numbers, nothing is left running.
The figures themselves are not tested (they depend on the machine)."""

from __future__ import annotations

import sys

import psutil
import pytest
from test_benchmarks_smoke import number, parse_tables, run_watching_descendants

from .parts import redis_binary

RUN_TIMEOUT = 240.0  # the failover measure kills two nodes (about 15 s), the Sentinel one a master


@pytest.mark.once
@pytest.mark.timeout(RUN_TIMEOUT + 30)
@pytest.mark.skipif(redis_binary() is None, reason="redis-server is not installed (.ci/run installs it)")
def test_quick_scale_out_section(tmp_path, no_leaks) -> None:
    argv = [sys.executable, "-m", "benchmarks", "--quick", "--rounds", "1", "--only", "scale_out"]
    returncode, stdout, stderr, descendants = run_watching_descendants(argv, tmp_path, RUN_TIMEOUT)
    assert returncode == 0, stdout[-3000:] + stderr[-5000:]
    tables = parse_tables(stdout)

    round_trips = tables["Echo tool call round trip (medians over rounds)"]
    assert [row["path"].split(":")[0] for row in round_trips] == ["scale-out, same node", "scale-out, across nodes"]
    for row in round_trips:
        assert int(row["calls"]) > 0 and int(row["errors"]) == 0, row
        assert number(row["p99 ms"]) >= number(row["p50 ms"]) > 0
    ratios = {row["comparison"]: number(row["ratio"]) for row in tables["Ratios (paired per round, median)"]}
    assert len(ratios) == 4 and all(value > 0 for value in ratios.values())
    registry = tables["Scale-out: Redis office registry operations (one thread)"]
    assert len(registry) == 5 and all(number(row["ops/s"]) > 0 for row in registry)
    [failover] = tables["Scale-out: failover, SIGKILL of a node → Agent back in office and answered"]
    assert int(failover["kills"]) == 2
    assert number(failover["max s"]) >= number(failover["p99 s"]) >= number(failover["p50 s"]) > 0
    [recovery] = tables["Scale-out: recovery of one node's members"]
    assert int(recovery["members"]) == 300 and number(recovery["written back after FLUSHALL s"]) > 0 < number(recovery["purged s"])
    [sentinel] = tables["Scale-out: Sentinel failover, SIGKILL of the master → office whole and routed"]
    assert int(sentinel["failovers"]) == 1 and number(sentinel["p50 s"]) > 0

    survivors = [p.pid for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not survivors, f"processes started by the benchmark still run: {survivors}"
