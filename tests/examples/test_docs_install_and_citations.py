"""The docs a user follows: install commands that work from this repository (smcp_sync
is not on PyPI), and no citation of a spec file as if it were in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").rglob("*.md")),
    *sorted((REPO / "examples").rglob("README.md")),
    *sorted((REPO / "examples").rglob("*.ipynb")),
]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_install_commands_install_from_the_repository(doc: Path) -> None:
    commands = [re.split(r"#|&&|`|\\n", line.split("pip install", 1)[1])[0] for line in doc.read_text(encoding="utf-8").splitlines() if "pip install" in line]
    from_the_index = [c for c in commands if {"smcp-sync", "smcp_sync"} & set(c.split())]
    assert from_the_index == [], "smcp_sync is installed from the repository: pip install '.[server]'"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_cited_spec_files_are_not_presented_as_repository_paths(doc: Path) -> None:
    if doc == REPO / "docs" / "specification.md":
        pytest.skip("the page that says what the spec/ prefix stands for and where it is")
    text = doc.read_text(encoding="utf-8")
    cited = re.findall(r"`(spec/[\w./-]+)`", text)
    assert [path for path in cited if not (REPO / path).exists()] == []


SPECIFICATION = REPO / "docs" / "specification.md"
#: `spec/NAME` (the v0.2.0 draft) and `spec-0.3/NAME` (the 0.3.0 documents and what 0.4 adds).
SPEC_CITATION = re.compile(r"\b(spec(?:-0\.3)?)/([\w./-]*[\w/])")


def spec_citations() -> set[tuple[str, str]]:
    """(prefix, document) of every citation of the A2C-SMCP documents in the package, the
    tests and the docs."""
    sources = [*(REPO / "smcp_sync").rglob("*.py"), *(REPO / "tests").rglob("*.py"), *(REPO / "tests").rglob("*.md")]
    sources += [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    return {match.groups() for source in sources for match in SPEC_CITATION.finditer(source.read_text(encoding="utf-8"))}


def test_the_specification_page_says_where_every_cited_document_is() -> None:
    """The code cites the protocol's documents by two prefixes; docs/specification.md names
    the version each prefix stands for, the public repository and the published pages,
    and every document cited; README links to it."""
    page = SPECIFICATION.read_text(encoding="utf-8")
    assert "A2C-SMCP protocol 0.4.0" in page.replace("*", "")
    assert "https://github.com/A2C-SMCP/a2c-smcp-protocol" in page
    for version in ("0.2.0", "0.3.0", "0.4.0"):
        assert f"https://a2c-smcp.github.io/a2c-smcp-protocol/{version}/" in page
    cited = spec_citations()
    assert {prefix for prefix, _ in cited} == {"spec", "spec-0.3"} and len(cited) > 15
    named = {(prefix, document) for prefix, document in cited if f"`{prefix}/" in page and document.split("/")[-1] in page}
    assert cited - named == set(), "docs/specification.md names every document the code cites"
    assert "(docs/specification.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_links_lead_to_files_and_headings_that_exist() -> None:
    """README's links into the docs (mkdocs checks the links between the pages, not README's):
    each names a file of the repository, and a `#fragment` a heading of that file."""
    links = re.findall(r"\]\(([^)#:]+)(?:#([\w-]+))?\)", (REPO / "README.md").read_text(encoding="utf-8"))
    assert len(links) > 15
    for target, fragment in links:
        assert (REPO / target).is_file(), target
        if fragment:
            headings = re.findall(r"^#+ (.+)$", (REPO / target).read_text(encoding="utf-8"), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", heading).strip().lower().replace(" ", "-") for heading in headings}
            assert fragment in slugs, (target, fragment)


def test_the_benchmark_findings_and_runs_cited_are_in_benchmarks_readme() -> None:
    """Code comments, tests and docs cite "benchmarks/README.md, Findings 5", "run G",
    "capacity": the findings stay there (docs/decisions.md shows them from there), so each
    cited finding and run is a heading of that file."""
    benchmarks = (REPO / "benchmarks" / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", benchmarks, re.MULTILINE)
    sources = [*(REPO / "smcp_sync").rglob("*.py"), *(REPO / "tests").rglob("*.py"), REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    text = "\n".join(source.read_text(encoding="utf-8") for source in sources)
    citations = re.findall(r"benchmarks/README\.md`?,? \(?(Findings \d+(?: and \d+)?|runs? [A-Z](?: and [A-Z])?\b|capacity)", text)
    assert len(citations) > 10
    for citation in citations:
        kind, _, names = citation.partition(" ")
        if kind == "capacity":
            assert any("capacity" in heading for heading in headings)
        for name in names.split(" and ") if names else ():
            wanted = f"{name}. " if kind == "Findings" else f"Run {name} "
            assert any(heading.startswith(wanted) for heading in headings), citation
    assert "<!-- --8<-- [start:findings]" in benchmarks.split("## Findings", 1)[1][:200]
