"""`pip install smcp_sync && smcp-sync demo` on a fresh machine: the demo needs nothing
but the wheel. The wheel is built from the sources (pip, as a user would) and the demo
run from the unpacked wheel, in another directory, with the repository out of reach.
Marked `once` (tox runs it in one environment): the wheel is pure Python, the same for
every interpreter; test_demo.py runs the demo itself from the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import smcp_sync

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_leaks"), pytest.mark.once]

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(smcp_sync.__file__).parent
SOURCES = ["setup.cfg", "setup.py", "README.md", "LICENSE"]


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(REPO / name, source / name)
    shutil.copytree(PACKAGE, source / "smcp_sync", ignore=shutil.ignore_patterns("__pycache__"))
    # --use-pep517: an isolated build, as current pips do by default (older ones would
    # otherwise need the `wheel` package next to them).
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--use-pep517", "--no-deps", "--quiet"]
    built = subprocess.run(
        [*pip_wheel, "--wheel-dir", str(root / "dist"), str(source)], capture_output=True, text=True, timeout=100
    )
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("smcp_sync-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(root / "site")
    return root / "site"


def test_the_wheel_ships_the_example_servers_and_every_sample_document(unpacked_wheel: Path) -> None:
    shipped = unpacked_wheel / "smcp_sync" / "demo"
    for name in ("documents", "servers"):
        wanted = {p.relative_to(PACKAGE) for p in (PACKAGE / "demo" / name).rglob("*") if _source_file(p)}
        assert wanted and {p.relative_to(unpacked_wheel / "smcp_sync") for p in (shipped / name).rglob("*")} >= wanted


def test_the_demo_runs_from_the_wheel_alone(unpacked_wheel: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}  # ahead of the editable install
    where = subprocess.run(
        [sys.executable, "-c", "import smcp_sync; print(smcp_sync.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=30,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(unpacked_wheel)

    demo = subprocess.run(
        [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main(['demo', '--json']))"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=90,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    records = {record["step"]: record for record in map(json.loads, demo.stdout.splitlines())}
    assert records["finish"]["ok"] is True
    assert records["finder"]["total_count"] == 5
    assert records["update"]["total_count"] == 6


def _source_file(path: Path) -> bool:
    return path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
