"""The Quick start (docs/quick-start.md) runs as written: its Server, Computer, Agent and
Closing blocks executed in order in one namespace, as a user pastes them into one session,
printing what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

QUICK_START = Path(__file__).resolve().parents[2] / "docs" / "quick-start.md"


def quick_start_blocks() -> list[tuple[str, str]]:
    """(heading, code) of every Python block of the section that runs them in one session."""
    text = QUICK_START.read_text(encoding="utf-8")
    section = text.split("## Server, Computer and Agent in one session", 1)[1].split("\n## ", 1)[0]
    blocks, heading = [], ""
    for part in re.split(r"(^### [^\n]*$|```python\n.*?```)", section, flags=re.MULTILINE | re.DOTALL):
        if part.startswith("### "):
            heading = part[4:]
        elif part.startswith("```python"):
            blocks.append((heading, part[len("```python\n") : -3]))
    return blocks


def test_the_quick_start_blocks_run_in_order() -> None:
    blocks = quick_start_blocks()
    assert [heading for heading, _ in blocks] == ["Server", "Computer", "Agent", "Agent"]
    names: dict = {}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            for heading, code in blocks:
                exec(compile(code, f"docs/quick-start.md ({heading})", "exec"), names)
    finally:
        with contextlib.suppress(Exception):  # a block that failed left these to close
            names["computer"].close()
            names["server"].stop()
    lines = printed.getvalue().splitlines()
    assert lines[0].startswith("['tools__calculate', ") and lines[1:] == ["42 False", "2"]
    assert names["result"].text == "42"
