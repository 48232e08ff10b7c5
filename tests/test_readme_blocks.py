"""Every ```python block of README.md and of the examples' READMEs runs as written,
against real parts: the blocks of one README in document order in one namespace, as a
reader pastes them into one session. A block that cannot run on its own says so in the
Markdown, on the line before its fence (`<!-- not-run: why -->`); such blocks are
counted with the others in `EXPECTED`, so that none drops out unnoticed.

The README reaches the demo (`smcp-sync demo --serve --port 8000`) at its documented
URL; here the demo runs on a free port, and that one literal is rewritten to its URL."""

from __future__ import annotations

import configparser
import contextlib
import io
import re
import subprocess
import sys
import textwrap
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.demo.stage import DemoStage, StageSettings

REPO = Path(__file__).resolve().parents[1]
READMES = [REPO / "README.md", *sorted((REPO / "examples").rglob("README.md"))]
#: Where the README says the demo listens; rewritten to the started demo's URL.
DEMO_URL = "http://127.0.0.1:8000"
BLOCK_TIMEOUT = 30.0
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->")

#: README -> (blocks that run, blocks marked not-run). Adding or removing a block
#: means updating this line, so no block leaves the test silently.
EXPECTED = {
    "README.md": (7, 3),
    "examples/README.md": (0, 0),
    "examples/computer_config/README.md": (0, 0),
    "examples/django_project/README.md": (0, 0),
    "examples/flask_app/README.md": (0, 0),
    "examples/notebooks/README.md": (0, 0),
}


@dataclass(frozen=True)
class Block:
    readme: str
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the marker's reason

    @property
    def where(self) -> str:
        return f"{self.readme}:{self.line}"


def python_blocks(readme: Path) -> list[Block]:
    """The ```python blocks of `readme`, in order; other fenced blocks are skipped whole."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        fence = lines[index].strip()
        if fence.startswith("```"):
            end = next((i for i in range(index + 1, len(lines)) if lines[i].strip() == "```"), None)
            assert end is not None, f"{readme.name}:{index + 1}: a fence that is never closed"
            if fence[3:].strip() == "python":
                before = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
                marker = NOT_RUN.fullmatch(before)
                code = textwrap.dedent("\n".join(lines[index + 1 : end]) + "\n")  # a fence in a list is indented
                blocks.append(Block(str(readme.relative_to(REPO)), index + 1, code, marker and marker.group(1)))
            index = end
        index += 1
    return blocks


def test_every_readme_is_listed() -> None:
    assert sorted(str(readme.relative_to(REPO)) for readme in READMES) == sorted(EXPECTED)


@pytest.mark.parametrize("readme", sorted(EXPECTED))
def test_block_counts(readme: str) -> None:
    blocks = python_blocks(REPO / readme)
    counted = (sum(b.not_run is None for b in blocks), sum(b.not_run is not None for b in blocks))
    assert counted == EXPECTED[readme], [(b.where, b.not_run) for b in blocks]


def run_block(block: Block, names: dict[str, Any]) -> None:
    """Execute `block` in `names` on a thread of its own, failing the test when it raises
    or takes longer than BLOCK_TIMEOUT."""
    failure: list[str] = []

    def execute() -> None:
        try:
            exec(compile(block.code, block.where, "exec"), names)
        except BaseException:
            failure.append(traceback.format_exc())

    runner = threading.Thread(target=execute, name=f"readme block {block.where}", daemon=True)
    runner.start()
    runner.join(BLOCK_TIMEOUT)
    if runner.is_alive():
        pytest.fail(f"{block.where}: still running after {BLOCK_TIMEOUT} s")
    if failure:
        pytest.fail(f"{block.where} raised:\n{failure[0]}")


def close_everything(names: dict[str, Any]) -> None:
    """What the blocks started and did not close (a block failed): closing is idempotent."""
    for value in names.values():
        with contextlib.suppress(Exception):
            if isinstance(value, (Agent, Computer)):
                value.close()
            elif isinstance(value, SMCPServer):
                value.stop()


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("readme", [name for name, (runs, _) in EXPECTED.items() if runs])
def test_the_blocks_run_in_order(readme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the blocks write files into the current folder
    blocks = [block for block in python_blocks(REPO / readme) if block.not_run is None]
    names: dict[str, Any] = {"__name__": "__main__"}
    with DemoStage(StageSettings()) as demo, contextlib.redirect_stdout(io.StringIO()):
        demo.release_agent()  # as `smcp-sync demo --serve` does: the office takes one Agent
        try:
            for block in blocks:
                run_block(Block(block.readme, block.line, block.code.replace(DEMO_URL, demo.url), None), names)
        finally:
            close_everything(names)


def test_the_two_commands_are_what_they_say() -> None:
    """`pip install '.[server]' && smcp-sync demo` and `bash .ci/run`: the extra and the
    command exist, and the CI script runs the tox matrix it names (the demo itself runs
    in tests/cli/test_demo.py)."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## The two commands", 1)[1]
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    assert [line.split("#")[0].strip() for line in commands.splitlines()] == [
        "pip install '.[server]' && smcp-sync demo",
        "bash .ci/run",
    ]
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    assert "server" in setup["options.extras_require"]
    assert "smcp-sync = smcp_sync.cli:main" in setup["options.entry_points"]["console_scripts"]
    smcp_sync = Path(sys.executable).with_name("smcp-sync")  # the installed console script
    demo_help = subprocess.run([str(smcp_sync), "demo", "--help"], capture_output=True, text=True, timeout=60)
    assert demo_help.returncode == 0 and "--serve" in demo_help.stdout, demo_help.stderr

    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(REPO / ".ci" / "run")], timeout=30).returncode == 0
    assert "python3 -m venv .venv-tox" in script and "'tox>=" in script
    assert "tox run-parallel --parallel 2" in script
    tox = configparser.ConfigParser()
    tox.read(REPO / "tox.ini")
    assert [env.strip() for env in tox["tox"]["envlist"].split(",")] == ["py313", "py310", "py311", "lowest", "py312"]
