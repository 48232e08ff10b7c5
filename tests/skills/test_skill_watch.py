"""Skills that announce changes (docs/computer/skills.md): a package written
into the user skills folder reaches a peer Agent as `notify:update_skills`, through a real
Server, with the new skill listed; watched by watchdog, or polled without it. close()
stops the watcher's threads (no_leaks)."""

from __future__ import annotations

import contextlib
import queue
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync.computer.channels.skill_watch import SkillFolderWatch
from smcp_sync.protocol import events
from smcp_sync.computer import ChannelOptions, SkillsOptions

from office_parts import connected_computer, joined_agent, serving

pytestmark = pytest.mark.timeout(60)

T = 20.0
OFFICE = "watched-skills"
#: The bound within which the notice must come: the poll interval (1 s) and the debounce,
#: with room for a loaded machine.
NOTICE_BOUND = 15.0


def write_package(folder: Path, name: str, description: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\nBody.\n")


@pytest.fixture(params=["watchdog", "polling"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "watchdog":
        pytest.importorskip("watchdog.observers")
    else:
        monkeypatch.setitem(sys.modules, "watchdog.observers", None)  # as if not installed
    return str(request.param)


@pytest.fixture
def office(tmp_path: Path, backend: str, no_leaks: None) -> Iterator[dict[str, Any]]:
    user = tmp_path / "user"
    write_package(user, "first", "Was there from the start")
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving())
        computer = stack.enter_context(
            connected_computer("c1", [], server.url, OFFICE, timeout=T, skills=SkillsOptions(user_folder=user), channels=ChannelOptions(update_debounce=0.05))
        )
        agent = stack.enter_context(joined_agent("a1", server.url, OFFICE, timeout=T))
        notices: queue.Queue[Any] = queue.Queue()
        agent.on(events.UPDATE_SKILLS_NOTIFICATION, notices.put)
        yield {"user": user, "computer": computer, "agent": agent, "notices": notices}


def test_a_package_written_into_the_folder_is_announced_and_listed(office: dict[str, Any], backend: str) -> None:
    agent, notices = office["agent"], office["notices"]
    assert office["computer"]._user_skills_watch.polling is (backend == "polling")
    assert [s.name for s in agent.get_skills("c1", timeout=T)] == ["first"]

    write_package(office["user"], "fresh", "Written while the Computer runs")

    assert notices.get(timeout=NOTICE_BOUND).computer == "c1"
    assert sorted(s.name for s in agent.get_skills("c1", timeout=T)) == ["first", "fresh"]


def test_a_removed_package_is_announced_too(office: dict[str, Any]) -> None:
    (office["user"] / "first" / "SKILL.md").unlink()

    assert office["notices"].get(timeout=NOTICE_BOUND).computer == "c1"
    assert office["agent"].get_skills("c1", timeout=T) == []


def test_polling_sees_packages_and_their_skill_md_only(tmp_path: Path) -> None:
    watch = SkillFolderWatch("c1", tmp_path, lambda event: None, quiet=0.05, use_watchdog=False)
    empty = watch._fingerprint()
    (tmp_path / "not-yet").mkdir()
    assert watch._fingerprint() == empty  # a folder without SKILL.md is no package
    write_package(tmp_path, "pkg", "One")
    with_package = watch._fingerprint()
    assert with_package != empty
    (tmp_path / "pkg" / "notes.md").write_text("other files do not count\n")
    assert watch._fingerprint() == with_package
    (tmp_path / "pkg" / "SKILL.md").write_text("---\nname: pkg\ndescription: Changed, longer\n---\n")
    assert watch._fingerprint() != with_package
    assert SkillFolderWatch("c1", tmp_path / "missing", print, 0.05)._fingerprint() == frozenset()
