"""docs/hosts/fork-and-interrupts.md runs as written: its ```python blocks in document
order in one namespace, against the real Server and Computer its first block starts (the
README's own blocks are run by tests/test_readme_blocks.py, whose helpers this reuses)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest

from test_readme_blocks import REPO, close_everything, python_blocks, run_block

DOC = REPO / "docs" / "hosts" / "fork-and-interrupts.md"  # counted in test_readme_blocks.EXPECTED


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_the_blocks_run_in_order() -> None:
    names: dict[str, Any] = {"__name__": "__main__"}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            for block in python_blocks(DOC):
                if block.not_run is None:
                    run_block(block, names)
    finally:
        close_everything(names)
    lines = printed.getvalue().splitlines()
    assert lines[0].startswith("cannot send client:tool_call: agent 'assistant' was connected to http://127.0.0.1:")
    assert "before os.fork()" in lines[0] and lines[1] == "2"
