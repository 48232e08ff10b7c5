"""The docs a user follows: install commands that work from this repository (smcp_sync
is not on PyPI), and no citation of a spec file as if it were in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "examples").rglob("README.md")), *sorted((REPO / "examples").rglob("*.ipynb"))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_install_commands_install_from_the_repository(doc: Path) -> None:
    commands = [re.split(r"#|&&|`|\\n", line.split("pip install", 1)[1])[0] for line in doc.read_text(encoding="utf-8").splitlines() if "pip install" in line]
    from_the_index = [c for c in commands if {"smcp-sync", "smcp_sync"} & set(c.split())]
    assert from_the_index == [], "smcp_sync is installed from the repository: pip install '.[server]'"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_cited_spec_files_are_not_presented_as_repository_paths(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    cited = re.findall(r"`(spec/[\w./-]+)`", text)
    assert [path for path in cited if not (REPO / path).exists()] == []
