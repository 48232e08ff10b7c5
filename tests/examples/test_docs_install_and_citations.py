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


#: Where the docs are cited: the package, the tests (but this file's examples of citations
#: that lead nowhere), the benchmarks' and examples' code, the build files, README and the
#: pages themselves.
CITING = [
    *(REPO / "smcp_sync").rglob("*.py"),
    *(path for path in (REPO / "tests").rglob("*.py") if path != Path(__file__).resolve()),
    *(REPO / "tests").rglob("*.md"),
    *(REPO / "benchmarks").rglob("*.py"),
    *(REPO / "examples").rglob("*.py"),
    REPO / "setup.cfg",
    REPO / "tox.ini",
    REPO / "README.md",
    *(REPO / "docs").rglob("*.md"),
]
#: A part of a page, named after its citation: in *stars*, in "quotes", or a phrase that
#: starts with a capital ("docs/ARCHITECTURE.md, Wire decisions: ...").
_PART = r'(?:\*([^*]+)\*|"([^"]+)"|([A-Z][\w-]*(?: [a-z][\w-]*)*))'
#: A page by its path (not a path written as a string: ``"docs/guide.md": ...``), and
#: after a comma maybe a part of it.
DOCS_CITATION = re.compile(r"(?<![\w/.-])(docs/[\w/.-]+\.md)(?![\w\"'])(?:,\s+" + _PART + ")?")
#: A section of README.md, as the code cited them before the pages existed.
README_CITATION = re.compile(r"(?<![\w/.-])README(?:\.md)?,?\s+" + _PART)


def parts_of(page: Path) -> set[str]:
    """What a citation may name in `page`: its headings and its bold terms."""
    text = page.read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {" ".join(part.replace("`", "").split()) for part in [*headings, *re.findall(r"\*\*(.+?)\*\*", text)]}


def names_a_part(page: Path, cited: str) -> bool:
    """`cited` is a heading or bold term of `page`, or the start of a heading (a page's
    title: "Scale-out" for "Scale-out: several Server processes behind one Redis")."""
    cited = " ".join(cited.split())
    return any(part == cited or re.match(re.escape(cited) + r"\b[:( ]", part) for part in parts_of(page))


def unresolved_citations(text: str) -> list[str]:
    """The citations in `text` that lead nowhere: a page of docs/ that does not exist or
    has no such part, a README section that is not a heading of README.md."""
    unresolved = []
    for match in DOCS_CITATION.finditer(text):
        page, part = REPO / match[1], next((group for group in match.groups()[1:] if group), None)
        if not page.is_file() or (part is not None and not names_a_part(page, part)):
            unresolved.append(match[0])
    for match in README_CITATION.finditer(text):
        if not names_a_part(REPO / "README.md", next(group for group in match.groups() if group)):
            unresolved.append(match[0])
    return unresolved


def test_every_citation_of_a_docs_page_or_readme_section_resolves() -> None:
    """Comments and docstrings cite the pages of docs/ by path, and a part of one by its
    heading or bold term; a page renamed, or a heading reworded, fails here."""
    cited = {source: DOCS_CITATION.findall(source.read_text(encoding="utf-8")) for source in CITING}
    assert sum(map(len, cited.values())) > 60
    unresolved = {str(s.relative_to(REPO)): unresolved_citations(s.read_text(encoding="utf-8")) for s in CITING}
    assert {source: found for source, found in unresolved.items() if found} == {}


@pytest.mark.parametrize(
    "text, leads_nowhere",
    [
        ("(docs/server/scale-out.md, *Costs*)", False),
        ("(docs/ARCHITECTURE.md, Wire decisions: the rule)", False),
        ("(docs/computer/oauth.md, \"From a terminal\")", False),
        ("(docs/server/scale-out.md)", False),
        ("(README, Documentation)", False),
        ("(docs/server/nowhere.md)", True),
        ("(docs/server/scale-out.md, *Nowhere*)", True),
        ("(docs/ARCHITECTURE.md, Wire rules)", True),
        ("(README, Security)", True),
        ("(README, \"OAuth for remote MCP servers\")", True),
        ("README Scale-out", True),
    ],
)
def test_a_citation_leads_somewhere_or_is_reported(text: str, leads_nowhere: bool) -> None:
    assert bool(unresolved_citations(text)) is leads_nowhere
