"""No dead names: pyflakes' checks (ruff's `F` rules: unused imports and variables,
undefined names, redefinitions) pass over the package, its tests, benchmarks and
examples. `--isolated` keeps it to those rules whatever configuration a user has; it is
the same on every interpreter, so it runs in one tox environment (`once`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ruff")

pytestmark = pytest.mark.once

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.timeout(120)
def test_pyflakes_rules_pass_everywhere() -> None:
    trees = ["smcp_sync", "tests", "benchmarks", "examples", "setup.py"]
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", "--output-format", "concise", *trees]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr
