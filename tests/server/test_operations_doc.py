"""Every ```python block of docs/server/operations.md runs as written, in document order
in one namespace, against real parts (a Server, a Computer), as tests/test_readme_blocks.py
runs the other pages' blocks (which counts them, in its `EXPECTED`), checking what they print."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from test_readme_blocks import REPO, close_everything, python_blocks, run_block

DOC = REPO / "docs" / "server" / "operations.md"


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_leaks")
def test_the_blocks_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the audit block writes audit.jsonl into the current folder
    names: dict[str, Any] = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        try:
            for block in (b for b in python_blocks(DOC) if b.not_run is None):
                run_block(block, names)
        finally:
            close_everything(names)
    assert "200 {'status': 'ready'" in printed.getvalue()
    assert "('agent', 0.0)" in printed.getvalue()
