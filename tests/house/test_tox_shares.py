"""tox.ini shares the suites out over its environments through tests/conftest.py's
switches; whatever a test's marks and path, one of py310-py313 runs it (README,
Development: every test runs at least once per tox run)."""

from __future__ import annotations

import configparser
import itertools
import re
from pathlib import Path
from typing import Any

import pytest

import conftest

REPO = Path(__file__).resolve().parents[2]
INTERPRETERS = ("py310", "py311", "py312", "py313")
#: A test file of each kind of place: the `oldest` and the `newest` share of the edges
#: suites, a brackets suite, the core.
PLACES = ["reliability/test_x.py", "cli/test_x.py", "agent/test_x.py", "protocol/test_x.py"]


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


def test_the_oldest_and_newest_run_the_path_shares_and_the_middle_ones_the_core(monkeypatch) -> None:
    shares = {place: runs_in(place, (), monkeypatch) for place in PLACES}
    assert list(shares.values()) == [["py310"], ["py313"], ["py310", "py313"], list(INTERPRETERS)]


def test_the_suites_named_for_a_share_exist() -> None:
    named = [*itertools.chain.from_iterable(conftest.EDGE_SUITES.values()), *conftest.BRACKET_SUITES]
    assert [name for name in named if not (conftest.TESTS / name).exists()] == []
