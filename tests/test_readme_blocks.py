"""Every ```python block of the documentation runs as written, against real parts:
README.md, the site's pages (docs/**/*.md) and the examples' READMEs. The blocks of one
file run in document order in one namespace, as a reader pastes them into one session.
A block that cannot run on its own says so in the Markdown, on the line before its
fence (`<!-- not-run: why -->`); such blocks are counted with the others in `EXPECTED`,
which lists every file, so that no file or block drops out unnoticed.

A page that reaches the demo (`smcp-sync demo --serve --port 8000`) names its documented
URL; here the demo runs on a free port, and that one literal is rewritten to its URL.
The demo is started only for the files that name it."""

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
#: Every Markdown file whose code blocks are documentation a reader runs.
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "examples").rglob("README.md"))]
#: Where the README says the demo listens; rewritten to the started demo's URL.
DEMO_URL = "http://127.0.0.1:8000"
BLOCK_TIMEOUT = 30.0
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->")

#: File -> (blocks that run, blocks marked not-run). Adding a page or adding or removing
#: a block means updating this table, so no block leaves the test silently.
EXPECTED = {
    "README.md": (1, 0),
    "docs/ARCHITECTURE.md": (0, 0),
    "docs/agent.md": (3, 0),
    "docs/cli.md": (0, 0),
    "docs/computer/blobs.md": (1, 0),
    "docs/computer/config.md": (0, 0),
    "docs/computer/index.md": (0, 0),
    "docs/computer/inputs.md": (0, 0),
    "docs/computer/mcp-client.md": (3, 1),
    "docs/computer/oauth.md": (0, 1),
    "docs/computer/skills.md": (0, 0),
    "docs/decisions.md": (0, 0),
    "docs/hosts/fork-and-interrupts.md": (3, 4),
    "docs/hosts/relay.md": (1, 4),
    "docs/development.md": (0, 0),
    "docs/index.md": (0, 0),
    "docs/quick-start.md": (4, 0),
    "docs/reference/agent.md": (0, 0),
    "docs/reference/codec.md": (0, 0),
    "docs/reference/computer.md": (0, 0),
    "docs/reference/errors.md": (0, 0),
    "docs/reference/index.md": (0, 0),
    "docs/reference/models.md": (0, 0),
    "docs/reference/server.md": (0, 0),
    "docs/server/deployment.md": (0, 1),
    "docs/server/high-availability.md": (1, 2),
    "docs/server/operations.md": (7, 1),
    "docs/server/scale-out.md": (0, 0),
    "docs/server/security.md": (0, 0),
    "docs/server/security-redaction.md": (1, 0),
    "docs/specification.md": (0, 0),
    "docs/wire/compatibility.md": (0, 0),
    "docs/wire/handshake-and-auth.md": (0, 1),
    "docs/wire/index.md": (0, 0),
    "examples/README.md": (0, 0),
    "examples/computer_config/README.md": (0, 0),
    "examples/django_project/README.md": (0, 0),
    "examples/flask_app/README.md": (0, 0),
    "examples/notebooks/README.md": (0, 0),
}


#: What a file's blocks print, in part: each string must be in their output.
PRINTS = {
    "docs/computer/mcp-client.md": ("running\n",),
    "docs/hosts/fork-and-interrupts.md": (
        "cannot send client:tool_call: agent 'assistant' was connected to http://127.0.0.1:",
        "before os.fork()",
        "\n2\n",
    ),
    "docs/server/operations.md": ("200 {'status': 'ready'", "('agent', 0.0)"),
}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the marker's reason

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def python_blocks(doc: Path) -> list[Block]:
    """The ```python blocks of `doc`, in order; other fenced blocks are skipped whole."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        fence = lines[index].strip()
        if fence.startswith("```"):
            end = next((i for i in range(index + 1, len(lines)) if lines[i].strip() == "```"), None)
            assert end is not None, f"{doc.name}:{index + 1}: a fence that is never closed"
            if fence[3:].strip() == "python":
                before = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
                marker = NOT_RUN.fullmatch(before)
                code = textwrap.dedent("\n".join(lines[index + 1 : end]) + "\n")  # a fence in a list is indented
                blocks.append(Block(str(doc.relative_to(REPO)), index + 1, code, marker and marker.group(1)))
            index = end
        index += 1
    return blocks


def test_every_doc_is_listed() -> None:
    assert sorted(str(doc.relative_to(REPO)) for doc in DOCS) == sorted(EXPECTED)


@pytest.mark.parametrize("doc", sorted(EXPECTED))
def test_block_counts(doc: str) -> None:
    blocks = python_blocks(REPO / doc)
    counted = (sum(b.not_run is None for b in blocks), sum(b.not_run is not None for b in blocks))
    assert counted == EXPECTED[doc], [(b.where, b.not_run) for b in blocks]


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
# the fork page forks this multi-threaded process on purpose (Python 3.12+ warns)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.parametrize("doc", [name for name, (runs, _) in EXPECTED.items() if runs])
def test_the_blocks_run_in_order(doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the blocks write files into the current folder
    blocks = [block for block in python_blocks(REPO / doc) if block.not_run is None]
    names: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(printed))
        url = DEMO_URL
        if any(DEMO_URL in block.code for block in blocks):
            demo = stack.enter_context(DemoStage(StageSettings()))
            demo.release_agent()  # as `smcp-sync demo --serve` does: the office takes one Agent
            url = demo.url
        try:
            for block in blocks:
                run_block(Block(block.doc, block.line, block.code.replace(DEMO_URL, url), None), names)
        finally:
            close_everything(names)
    for expected in PRINTS.get(doc, ()):
        assert expected in printed.getvalue(), (doc, expected, printed.getvalue())


#: README's way to an active virtualenv, which both commands assume (PEP 668).
VENV_COMMAND = "python3 -m venv .venv && . .venv/bin/activate"


def the_two_commands_blocks() -> list[list[str]]:
    """The lines of the ```bash blocks of README's "The two commands": the virtualenv,
    then the two commands."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## The two commands", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)]


@pytest.mark.once
@pytest.mark.timeout(120)
def test_the_virtualenv_line_gives_an_active_virtualenv(tmp_path: Path) -> None:
    """The line README puts before the two commands makes a virtualenv and activates it:
    `pip` and `python` are then the virtualenv's (a PEP 668 system's are refused)."""
    shell = f"{VENV_COMMAND} && python -c 'import sys; print(sys.prefix)' && command -v pip"
    done = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr
    prefix, pip = done.stdout.split()
    assert Path(prefix) == tmp_path / ".venv" and Path(pip) == tmp_path / ".venv" / "bin" / "pip"


def test_the_two_commands_are_what_they_say() -> None:
    """`pip install '.[server]' && smcp-sync demo` and `bash .ci/run`: the extra and the
    command exist, and the CI script runs the tox matrix it names (the demo itself runs
    in tests/cli/test_demo.py)."""
    venv, commands = the_two_commands_blocks()
    assert venv == [VENV_COMMAND]
    assert [line.split("#")[0].strip() for line in commands] == [
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
    assert "tox run-parallel --parallel 3" in script
    tox = configparser.ConfigParser()
    tox.read(REPO / "tox.ini")
    assert [env.strip() for env in tox["tox"]["envlist"].split(",")] == ["py313", "py310", "py311", "py312", "lowest"]
