"""`smcp-sync agent ... skills C` and `skill C NAME` against a real Server and a Computer
with the user's own SKILL packages."""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync.cli import main
from smcp_sync.computer import SkillsOptions

from office_parts import connected_computer, serving

pytestmark = pytest.mark.timeout(60)

OFFICE = "skills-cli"
PICTURE = bytes(range(256)) * 200  # binary: always a blob handle


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    package = tmp_path / "user" / "my-helper"
    (package / "assets").mkdir(parents=True)
    (package / "SKILL.md").write_text("---\nname: my-helper\ndescription: Helps me\n---\nHelp.\n", encoding="utf-8")
    (package / "assets" / "picture.png").write_bytes(PICTURE)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving())
        stack.enter_context(connected_computer("desk", [], server.url, OFFICE, timeout=10, skills=SkillsOptions(user_folder=tmp_path / "user")))
        yield server.url


def agent_cli(url: str, *args: str) -> list[str]:
    return ["agent", "--url", url, "--office", OFFICE, "--timeout", "10", *args]


def test_skills_are_listed_and_a_skill_md_printed(url: str, capsys: Any) -> None:
    assert main(agent_cli(url, "skills", "desk")) == 0
    assert capsys.readouterr().out == "my-helper\tuser\tHelps me\n"
    assert main(agent_cli(url, "skill", "desk", "my-helper")) == 0
    assert capsys.readouterr().out == "Help.\n\n"
    assert main(agent_cli(url, "--json", "skill", "desk", "my-helper")) == 0
    assert json.loads(capsys.readouterr().out)["sha256"] == hashlib.sha256(b"Help.\n").hexdigest()


def test_a_binary_file_is_fetched_into_a_file(url: str, tmp_path: Path, capsys: Any) -> None:
    target = tmp_path / "out.png"
    assert main(agent_cli(url, "skill", "desk", "my-helper", "--rel-path", "assets/picture.png", "-o", str(target))) == 0
    assert capsys.readouterr().out == f"[{len(PICTURE)} bytes of image/png]\n"
    assert target.read_bytes() == PICTURE


def test_bad_names_and_paths_fail_with_the_spec_code(url: str, capsys: Any) -> None:
    assert main(agent_cli(url, "skill", "desk", "Not A Name")) == 1
    assert "4016" in capsys.readouterr().err
    assert main(agent_cli(url, "skill", "desk", "my-helper", "--rel-path", "../x")) == 1
    assert "4017" in capsys.readouterr().err


def test_the_computer_command_offers_the_users_skills(tmp_path: Path, capsys: Any) -> None:
    """`smcp-sync computer --user-skills DIR` as a process; our Agent CLI lists its skills."""
    package = tmp_path / "skills" / "shell-tips"
    package.mkdir(parents=True)
    (package / "SKILL.md").write_text("---\nname: shell-tips\ndescription: Shell tips\n---\nUse set -e.\n", "utf-8")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": []}), encoding="utf-8")
    with serving() as server:
        command = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "computer",
                   "--config", str(config), "--url", server.url, "--office", OFFICE, "--name", "cli-desk",
                   "--user-skills", str(tmp_path / "skills"), "--skill-home", str(tmp_path / "home")]
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None and "joined office" in proc.stdout.readline()
            assert main(agent_cli(server.url, "skills", "cli-desk")) == 0
            assert main(agent_cli(server.url, "skill", "cli-desk", "shell-tips")) == 0
            assert capsys.readouterr().out == "shell-tips\tuser\tShell tips\nUse set -e.\n\n"
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
            proc.stdout.close()
            proc.stderr.close()
