"""The package's import graph has no cycle and its wings depend one way (issue 22,
docs/ARCHITECTURE.md "Layers"). Every import statement counts, also those inside
functions and under TYPE_CHECKING: a cycle hidden there is still one a reader must untangle."""

from __future__ import annotations

import ast
from pathlib import Path

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


#: Who may not import whom among the Computer's wings (docs/ARCHITECTURE.md, "Layers").
WINGS = ("config", "mcp", "tools", "channels")
FORBIDDEN = {
    "config": {"mcp", "tools", "channels", "socket_side", "computer"},
    "mcp": {"tools", "channels", "socket_side", "computer"},
    "tools": {"channels", "socket_side", "computer"},
    "channels": {"tools", "socket_side", "computer"},
}


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["smcp_sync", "computer"] or len(parts) < 3:
        return None
    return parts[2]


def test_the_computer_wings_depend_one_way() -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if (wing := wing_of(module)) in FORBIDDEN and wing_of(target) in FORBIDDEN[wing]
    )
    assert wrong == []


def test_the_computer_top_level_stays_small() -> None:
    top = [p.name for p in (PACKAGE / "computer").iterdir() if p.suffix == ".py"]
    assert len(top) <= 10, top
    assert {p.name for p in (PACKAGE / "computer").iterdir() if p.is_dir() and p.name != "__pycache__"} == set(WINGS)
