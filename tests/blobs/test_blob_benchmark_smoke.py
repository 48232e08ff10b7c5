"""`python -m benchmarks.blobs` still runs: a 2 MB transfer each way, sha256 verified by
the script itself (it fails otherwise); the figures are not tested, their shape is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.once
def test_the_blob_benchmark_runs_and_reports_each_path(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.blobs", "--size-mb", "2", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=100,
    )
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 5  # header + smcp/raw each way
    figures = json.loads(out.read_text())
    for path in ("smcp_get", "smcp_put", "raw_get", "raw_put"):
        assert figures[path]["seconds"] > 0
    assert figures["smcp_get"]["agent_peak_mb"] >= figures["smcp_get"]["agent_baseline_mb"]
