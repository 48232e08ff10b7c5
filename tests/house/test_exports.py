"""Every name the package exports resolves at run time (issue 35): each name of each
`__all__` in the package, and `from smcp_sync import *` in a fresh interpreter. mypy
follows the `TYPE_CHECKING` imports instead, and the tests import most names from the
modules that define them, so neither notices a name `__all__` promises that is not there.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from .test_import_graph import PACKAGE, module_name


def declares_all(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            return True
    return False


EXPORTING = sorted(module_name(path) for path in PACKAGE.rglob("*.py") if declares_all(path))


def test_the_faces_declare_what_they_export() -> None:
    assert {"smcp_sync", "smcp_sync.connection", "smcp_sync.threads", "smcp_sync.server"} <= set(EXPORTING)


@pytest.mark.parametrize("name", EXPORTING)
def test_every_name_of_every_all_is_there(name: str) -> None:
    module = importlib.import_module(name)
    missing = [export for export in module.__all__ if not hasattr(module, export)]
    assert missing == []


def test_star_import_of_the_package_works_in_a_fresh_interpreter() -> None:
    code = (
        "from smcp_sync import *\nimport smcp_sync\n"
        "missing = [name for name in smcp_sync.__all__ if name not in globals()]\nassert not missing, missing"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
