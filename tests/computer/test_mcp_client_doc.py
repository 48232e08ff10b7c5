"""Every ```python block of docs/computer/mcp-client.md runs as written, in document order
in one namespace, against real parts (the bundled demo tools server); a block marked
`<!-- not-run: why -->` is counted, so that none drops out unnoticed."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from test_readme_blocks import REPO, Block, close_everything, python_blocks, run_block

DOC = REPO / "docs" / "computer" / "mcp-client.md"
#: (blocks that run, blocks marked not-run)
EXPECTED = (3, 1)


def test_the_blocks_are_counted() -> None:
    blocks = python_blocks(DOC)
    assert (sum(b.not_run is None for b in blocks), sum(b.not_run is not None for b in blocks)) == EXPECTED


@pytest.mark.timeout(120)
def test_the_blocks_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    monkeypatch.chdir(tmp_path)
    names: dict[str, Any] = {"__name__": "__main__"}
    shown = io.StringIO()
    try:
        with contextlib.redirect_stdout(shown):
            for block in python_blocks(DOC):
                if block.not_run is None:
                    run_block(Block(block.readme, block.line, block.code, None), names)
    finally:
        close_everything(names)
    assert shown.getvalue() == "running\n"
