"""The package's import graph has no cycle, and each part imports only what the layers
tables of docs/ARCHITECTURE.md ("Layers") allow it: the packages, the Computer's wings,
the Server's wings (issues 22 and 35). Every import statement counts, also those inside
functions and under TYPE_CHECKING: a cycle hidden there is still one a reader must untangle."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

import smcp_sync

PACKAGE = Path(smcp_sync.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """The smcp_sync modules `path` imports (a name imported from a package that is a
    submodule counts as that submodule)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("smcp_sync"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("smcp_sync"):
                continue
            submodules = {f"{source}.{alias.name}" for alias in node.names if exists(f"{source}.{alias.name}")}
            found.update(submodules or {source})
            if len(submodules) < len(node.names):
                found.add(source)
    found.discard(here)
    return found


def import_graph() -> dict[str, set[str]]:
    return {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The Layers section of docs/ARCHITECTURE.md: its tables say what each part of the package,
#: of the Computer and of the Server may import, and this test reads them, so the document
#: and the test are one fact.
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


class Table(NamedTuple):
    """One layers table: the package it divides (`scope`) and, per part (a subpackage or a
    module directly in it), the parts of the same package it may import (None: any)."""

    scope: str
    imports: dict[str, frozenset[str] | None]


def ticked(cell: str) -> list[str]:
    """The names in backticks in a table cell, as parts: `computer/config/` is `config`,
    `app.py` is `app`."""
    return [name.rstrip("/").rpartition("/")[2].removesuffix(".py") for name in re.findall(r"`([^`]+)`", cell)]


def layers_tables(text: str) -> list[Table]:
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    tables = []
    for block in re.findall(r"(?:^\|.*\|\n)+", section + "\n", flags=re.MULTILINE):
        header, _rule, *rows = (line.strip("|").split("|") for line in block.splitlines())
        scope = ".".join(["smcp_sync", *ticked(header[0])])
        imports: dict[str, frozenset[str] | None] = {}
        for part_cell, _holds, imports_cell in rows:
            allowed = None if imports_cell.strip() == "everything" else frozenset(ticked(imports_cell))
            imports.update(dict.fromkeys(ticked(part_cell), allowed))
        tables.append(Table(scope, imports))
    return tables


def part_of(module: str, scope: str) -> str | None:
    if module == scope:
        return "__init__"
    if not module.startswith(scope + "."):
        return None
    return module[len(scope) + 1 :].split(".")[0]


def violations(graph: dict[str, set[str]], tables: list[Table]) -> list[str]:
    """Every import of a part against its table, and every part its table does not name."""
    wrong = []
    for table in tables:
        for module, targets in graph.items():
            source = part_of(module, table.scope)
            if source is None:
                continue
            if source not in table.imports:
                wrong.append(f"{module}: {source} has no row in the table of {table.scope}")
                continue
            allowed = table.imports[source]
            for target in sorted(targets):
                other = part_of(target, table.scope)
                if other not in (None, source) and allowed is not None and other not in allowed:
                    wrong.append(f"{module} imports {target}: {source} may not import {other}")
    return wrong


TABLES = layers_tables(ARCHITECTURE.read_text(encoding="utf-8"))


def test_the_architecture_has_a_layers_table_per_divided_package() -> None:
    assert [table.scope for table in TABLES] == ["smcp_sync", "smcp_sync.computer", "smcp_sync.server"]


def test_every_part_imports_only_what_the_layers_tables_allow() -> None:
    assert violations(import_graph(), TABLES) == []


def test_a_wing_importing_against_the_order_fails() -> None:
    server = {"smcp_sync.server.offices.registry": {"smcp_sync.server.transport.engine"}}
    computer = {"smcp_sync.computer.config.inputs": {"smcp_sync.computer.mcp.manager"}}
    unlisted = {"smcp_sync.server.stray": {"smcp_sync.server.auth"}}
    assert violations(server, TABLES) == [
        "smcp_sync.server.offices.registry imports smcp_sync.server.transport.engine: offices may not import transport"
    ]
    assert len(violations(computer, TABLES)) == 1
    assert violations(unlisted, TABLES) == ["smcp_sync.server.stray: stray has no row in the table of smcp_sync.server"]


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.scope)
def test_top_levels_stay_small(table: Table) -> None:
    folder = PACKAGE.parent.joinpath(*table.scope.split("."))
    modules = [p.name for p in folder.iterdir() if p.suffix == ".py"]
    packages = {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    assert len(modules) <= 10, modules
    assert packages <= set(table.imports), packages
