"""docs/hosts/relay.md's ```python blocks: those that run, run as written (in one
namespace, in order, as tests/test_readme_blocks.py runs the READMEs'); the others say
why not (`<!-- not-run: ... -->`), and none drops out unnoticed."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_readme_blocks import python_blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "hosts" / "relay.md"


@pytest.mark.timeout(120)
def test_the_relay_recipes_run(no_leaks: None) -> None:
    blocks = python_blocks(DOC)
    assert (sum(b.not_run is None for b in blocks), sum(b.not_run is not None for b in blocks)) == (1, 4)
    namespace: dict[str, object] = {"__name__": "__relay_doc__"}
    for block in blocks:
        if block.not_run is None:
            exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 (the doc's own code)
