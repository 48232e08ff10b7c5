"""Staging of ``resources``-mode packages from a server without subscriptions (the demo's
tools server, a real child process): staged on every request, so concurrent requests
stage concurrently, and none may see a package missing or half written."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from smcp_sync import Computer
from smcp_sync.demo import SAMPLE_DOCUMENTS
from smcp_sync.demo.bundle import bundled_servers
from smcp_sync.computer import SkillsOptions

pytestmark = pytest.mark.timeout(90)


def test_concurrent_requests_see_whole_packages(tmp_path: Path) -> None:
    tools = bundled_servers(Path(SAMPLE_DOCUMENTS))[0]
    failures: list[str] = []
    with Computer("stager", [tools], skills=SkillsOptions(home=tmp_path / "home")) as computer:

        def ask() -> None:
            for _ in range(5):
                try:
                    names = [skill.name for skill in computer.skills()]
                    assert names == ["mcp:tools:quarterly-average", "mcp:tools:document-digest"], names
                    rounding = computer.skill_resource("mcp:tools:quarterly-average", "references/rounding.md")
                    assert rounding.read(0, 11) == b"# Rounding\n"
                except Exception as exc:  # collected: a thread's assertion would be lost
                    failures.append(repr(exc))

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        paths = {skill.path for skill in computer.skills()}
    assert failures == []
    # unchanged packages are staged once: one folder per package, named after it
    assert {Path(path).name for path in paths} == {"quarterly-average", "document-digest"}
    assert len(list((tmp_path / "home" / "mcp" / "tools").iterdir())) == 2
