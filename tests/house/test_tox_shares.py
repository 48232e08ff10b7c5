"""tox.ini shares the suites out over its environments through tests/conftest.py's
switches; whatever a test's marks and path, one of py310-py313 runs it (docs/development.md:
every test runs at least once per tox run), and each environment says which shares it ran."""

from __future__ import annotations

import configparser
import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import conftest

REPO = Path(__file__).resolve().parents[2]
INTERPRETERS = ("py310", "py311", "py312", "py313")
#: A test file of each kind of place: the `oldest` and the `newest` share of the edges
#: suites, the `computer` and the `others` share of the brackets suites, the core; then
#: edges suites inside brackets ones (they run with their edges share).
PLACES = [
    "reliability/test_x.py", "cli/test_x.py", "computer/test_x.py", "agent/test_x.py", "protocol/test_x.py",
    "scale_out/test_faults.py", "computer/mcp/test_supervision.py", "relay/test_hosts.py",
]  # fmt: skip


class Item:
    """What the conftest hook reads of a collected test: its path, marks and keywords."""

    def __init__(self, place: str, marks: tuple[str, ...]) -> None:
        self.path = conftest.TESTS / place
        self.marks: list[Any] = []
        self.keywords: set[str] = set()
        for name in marks:
            self.add_marker(getattr(pytest.mark, name))

    def add_marker(self, marker: Any) -> None:
        self.marks.append(marker.mark)
        self.keywords.add(marker.mark.name)

    def get_closest_marker(self, name: str) -> Any:
        return next((mark for mark in self.marks if mark.name == name), None)


def tox_switches() -> dict[str, dict[str, str]]:
    """The SMCP_* switches [testenv] setenv gives each interpreter's environment by default."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "tox.ini", encoding="utf-8")
    switches: dict[str, dict[str, str]] = {env: {} for env in INTERPRETERS}
    for line in parser["testenv"]["setenv"].splitlines():
        match = re.fullmatch(r"\s*([\w,]+):\s*(SMCP_\w+)\s*=\s*\{env:\2:(\w+)\}\s*", line)
        if match:
            for env in match[1].split(","):
                switches.get(env, {})[match[2]] = match[3]
    return switches


def runs_in(place: str, marks: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    found = []
    for env, switches in tox_switches().items():
        with monkeypatch.context() as patch:
            for switch in conftest.SKIP_SWITCHES.values():
                patch.delenv(switch, raising=False)
            for switch, value in switches.items():
                patch.setenv(switch, value)
            item = Item(place, marks)
            conftest.pytest_collection_modifyitems(None, [item])  # type: ignore[arg-type, list-item]
            if item.get_closest_marker("skip") is None:
                found.append(env)
    return found


def test_every_switch_is_set_somewhere_in_tox_ini() -> None:
    set_somewhere = {switch for switches in tox_switches().values() for switch in switches}
    assert set_somewhere == set(conftest.SKIP_SWITCHES.values())


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("marks", [(), ("once",), ("interop",), ("once", "interop")], ids="+".join)
def test_some_environment_runs_each_kind_of_test(place: str, marks: tuple[str, ...], monkeypatch) -> None:
    assert runs_in(place, marks, monkeypatch), f"a test in tests/{place} marked {marks} runs in no environment"


def test_each_path_share_runs_once_and_every_interpreter_runs_the_core(monkeypatch) -> None:
    shares = {place: runs_in(place, (), monkeypatch) for place in PLACES}
    assert list(shares.values()) == [["py310"], ["py313"], ["py313"], ["py312"], list(INTERPRETERS), ["py310"], ["py310"], ["py313"]]


def test_the_lanes_take_every_environment_once(monkeypatch) -> None:
    """.ci/run runs three environments at a time; `depends` chains them into three lanes."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "tox.ini", encoding="utf-8")
    after = {"lowest": parser["testenv:lowest"]["depends"].strip()}
    for line in parser["testenv"]["depends"].strip().splitlines():
        env, before = (part.strip() for part in line.split(":"))
        after[env] = before
    envlist = [env.strip() for env in parser["tox"]["envlist"].split(",")]
    firsts = [env for env in envlist if env not in after]
    lanes = []
    for first in firsts:
        lane = [first]
        while (following := [env for env, before in after.items() if before == lane[-1]]):
            lane.extend(following)
        lanes.append(lane)
    assert lanes == [["py313"], ["py310", "py312"], ["py311", "lowest"]]


def test_the_conformance_suite_runs_in_py312_alone(monkeypatch) -> None:
    """One environment is enough: the scenarios judge Node's suite against our Computer,
    the same on every interpreter; py312, the core's, is the shortest."""
    assert runs_in("conformance/test_x.py", (), monkeypatch) == ["py312"]


def test_the_suites_named_for_a_share_exist() -> None:
    named = [
        *itertools.chain.from_iterable(conftest.EDGE_SUITES.values()),
        *itertools.chain.from_iterable(conftest.BRACKET_SUITES.values()),
        conftest.CONFORMANCE_SUITE,
    ]  # fmt: skip
    assert [name for name in named if not (conftest.TESTS / name).exists()] == []


def test_each_environment_says_which_shares_it_ran_and_skipped() -> None:
    """The line tests/conftest.py writes under tox for each environment (.ci/run prints it
    beside the pytest summary): the middle interpreters skip the most, and say why."""
    counts = {"interop": 150, "once": 40, "edges": 300, "brackets": 700, "conformance": 30}
    lines = {env: conftest.share_summary(counts, switches) for env, switches in tox_switches().items()}
    assert lines["py311"] == (
        "tox shares (tox.ini): ran the core, interop; skipped once (SMCP_ONCE=skip: 40 tests), "
        "edges (SMCP_EDGES=skip: 300 tests), brackets (SMCP_BRACKETS=skip: 700 tests), "
        "conformance (SMCP_CONFORMANCE=skip: 30 tests)"
    )
    assert lines["py313"] == (
        "tox shares (tox.ini): ran the core, once, the 'newest' share of edges, the 'computer' share of brackets; "
        "skipped interop (SMCP_INTEROP=skip: 150 tests), the 'oldest' share of edges (SMCP_EDGES=newest: 300 tests), "
        "the 'others' share of brackets (SMCP_BRACKETS=computer: 700 tests), conformance (SMCP_CONFORMANCE=skip: 30 tests)"
    )
    assert lines["py312"] == (
        "tox shares (tox.ini): ran the core, the 'others' share of brackets, conformance; "
        "skipped interop (SMCP_INTEROP=skip: 150 tests), once (SMCP_ONCE=skip: 40 tests), "
        "edges (SMCP_EDGES=skip: 300 tests), the 'computer' share of brackets (SMCP_BRACKETS=others: 700 tests)"
    )
    assert lines["py310"] == (
        "tox shares (tox.ini): ran the core, the 'oldest' share of edges; skipped interop (SMCP_INTEROP=skip: 150 tests), "
        "once (SMCP_ONCE=skip: 40 tests), the 'newest' share of edges (SMCP_EDGES=oldest: 300 tests), "
        "brackets (SMCP_BRACKETS=skip: 700 tests), conformance (SMCP_CONFORMANCE=skip: 30 tests)"
    )
    assert conftest.share_summary(counts, {}) is None  # outside tox every test runs: no line


def test_pytest_prints_the_shares_line_before_its_summary(tmp_path: Path) -> None:
    """The hook in a real pytest session, and .ci/summary reading its log as tox writes it."""
    environment = {
        **os.environ, "SMCP_INTEROP": "skip", "SMCP_ONCE": "skip", "SMCP_EDGES": "newest", "SMCP_BRACKETS": "computer",
        "SMCP_CONFORMANCE": "skip",
    }  # fmt: skip
    chosen = "tests/house/test_tox_shares.py::test_the_suites_named_for_a_share_exist"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", chosen],
        cwd=REPO, capture_output=True, text=True, timeout=100, env=environment,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[-2].startswith(
        "tox shares (tox.ini): ran the core, the 'newest' share of edges, the 'computer' share of brackets; skipped interop"
    )
    assert lines[-1].startswith("1 passed")

    log = tmp_path / ".tox" / "py313" / "log" / "4-commands[0].log"
    log.parent.mkdir(parents=True)
    log.write_text(run.stdout, encoding="utf-8")
    started = tmp_path / "started"  # .ci/run's marker, made before tox ran: the log is newer
    started.touch()
    os.utime(started, (time.time() - 60, time.time() - 60))
    summary = subprocess.run(["bash", str(REPO / ".ci" / "summary"), str(tmp_path / ".tox"), str(started)],
                             capture_output=True, text=True, timeout=30)  # fmt: skip
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.splitlines() == [f"py313 {lines[-2].removeprefix('tox ')}", f"py313: {lines[-1]}"]
