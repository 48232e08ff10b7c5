"""Type information reaches users: `mypy --strict` on a script that imports from
`smcp_sync` reports exactly its deliberate mistakes, and the whole package checks clean
under the repository's mypy configuration (setup.cfg's `[mypy]`: strict). Both need the
`test` extra's mypy. They run in one tox environment (`once`): mypy checks for setup.cfg's
`python_version` (the oldest supported), whichever interpreter runs it."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest

import smcp_sync

pytest.importorskip("mypy")

pytestmark = pytest.mark.once

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = Path(smcp_sync.__file__).resolve().parent.parent
#: The checkout these tests belong to: the package check reads its sources (under tox the
#: installed copy lives in site-packages, where mypy would take every module there for
#: the user's own) and its configuration.
REPO_ROOT = HERE.parent.parent


def run_mypy(*arguments: str, cwd: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if str(PACKAGE_ROOT) not in {str(Path(p).resolve()) for p in site.getsitepackages()}:
        env["MYPYPATH"] = str(PACKAGE_ROOT)  # an editable install mypy cannot follow
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-color-output", *arguments]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=280)


def expected_errors(script: Path) -> set[tuple[int, str]]:
    marked = re.compile(r"#\s*error:\s*([a-z-]+)")
    lines = script.read_text().splitlines()
    return {(number, m.group(1)) for number, line in enumerate(lines, 1) if (m := marked.search(line))}


@pytest.mark.timeout(300)
def test_strict_mypy_reports_exactly_the_users_mistakes(tmp_path: Path) -> None:
    script = HERE / "user_script.py"
    done = run_mypy(
        "--strict", "--follow-imports=silent", "--python-version", "3.10", str(script), cwd=tmp_path, tmp_path=tmp_path
    )
    reported = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"user_script\.py:(\d+): error: .*\[([a-z-]+)\]$", done.stdout, re.MULTILINE)
    }
    assert reported == expected_errors(script), done.stdout + done.stderr


@pytest.mark.timeout(300)
def test_the_package_checks_clean_under_its_strict_configuration(tmp_path: Path) -> None:
    done = run_mypy("--config-file", "setup.cfg", "smcp_sync", cwd=REPO_ROOT, tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Success: no issues found in \d{3,} source files", done.stdout), done.stdout


def test_the_models_all_is_written_out_and_complete() -> None:
    """Type checkers read a literal `__all__` only, so it is written out; this keeps it
    listing every public model and constant of the package."""
    import smcp_sync.protocol.models as models

    public = {name for name in vars(models) if not name.startswith("_") and (name[0].isupper() or name.isupper())}
    assert sorted(models.__all__) == sorted(public)
