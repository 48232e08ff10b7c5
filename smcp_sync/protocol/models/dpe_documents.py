"""Finder structures (spec/finder.md): the catalogue request/answer and the DPE levels.

`DPEDocument` is what an MCP server returns for Level 1 (and lists at Level 0);
`DPEDocumentSummary` is the catalogue entry a Computer returns, which adds `server`.
"""

from __future__ import annotations

import html
from typing import Any

from ._display import html_table, markdown_escape, markdown_table, named, shorten
from ._fields import empty_list, fields_of, wire_model

#: The 19 standard element categories (spec/finder.md, 元素类型).
ELEMENT_CATEGORIES = frozenset(
    {
        "text", "heading", "list", "code",
        "table", "pivot_table",
        "chart", "diagram", "image",
        "formula", "link", "annotation",
        "header", "footer", "separator",
        "audio", "video",
        "form", "widget",
    }
)  # fmt: skip

DEFAULT_FINDER_LIMIT = 20
MAX_FINDER_LIMIT = 100


@wire_model
class GetFinderReq:
    agent: str
    req_id: str
    computer: str
    keywords: list[str] | None = None
    file_type: str | None = None
    offset: int = 0
    limit: int = DEFAULT_FINDER_LIMIT


@wire_model
class _DocumentMetadata:
    """Document-level metadata (spec/finder.md 文档级元数据), shared by the Level 1 answer
    and the catalogue entry."""

    doc_ref: str
    uri: str
    file_uri: str
    file_type: str
    title: str
    page_count: int
    keywords: list[str] | None = None
    summary: str | None = None
    last_modified: str | None = None


    def _facts(self) -> list[tuple[str, Any]]:
        facts = [("uri", self.uri), ("type", self.file_type), ("pages", self.page_count), ("keywords", self.keywords)]
        return [*facts, ("summary", self.summary), ("last modified", self.last_modified)]

    def _repr_html_(self) -> str:
        pages = getattr(self, "pages", None)
        index = _page_table(pages, html_table) if pages else ""
        return f"<strong>{html.escape(self.title)}</strong>" + html_table(("", ""), self._facts()) + index

    def _repr_markdown_(self) -> str:
        rows = "\n".join(f"- **{name}**: {markdown_escape(_listed(value))}" for name, value in self._facts() if value is not None)
        pages = getattr(self, "pages", None)
        index = "\n\n" + _page_table(pages, markdown_table) if pages else ""
        return f"### {markdown_escape(self.title)}\n\n{rows}{index}"


def _document_repr(self: _DocumentMetadata) -> str:
    return f"{type(self).__name__}({shorten(self.title, 60)!r}, uri={self.uri!r}, {self.page_count} pages)"


def _listed(value: Any) -> Any:
    return ", ".join(value) if isinstance(value, list) else value


def _page_table(pages: list[DPEPageSummary], table: Any) -> str:
    return str(table(("page", "title", "elements", "uri"), [(p.page_index, p.title, p.element_count, p.uri) for p in pages]))


@wire_model
class DPEDocumentSummary(_DocumentMetadata):
    server: str

    __repr__ = _document_repr


@wire_model
class GetFinderRet:
    documents: list[DPEDocumentSummary]
    total_count: int
    req_id: str

    def __repr__(self) -> str:
        return f"GetFinderRet({len(self.documents)} of {self.total_count} documents: {named(d.title for d in self.documents)})"

    def _rows(self) -> list[tuple[Any, ...]]:
        return [(d.title, d.file_type, d.page_count, d.uri, d.server) for d in self.documents]

    def _caption(self) -> str:
        return f"{len(self.documents)} of {self.total_count} documents"

    def _repr_html_(self) -> str:
        return html_table(("title", "type", "pages", "uri", "MCP server"), self._rows(), self._caption())

    def _repr_markdown_(self) -> str:
        return markdown_table(("title", "type", "pages", "uri", "MCP server"), self._rows(), self._caption())


@wire_model
class DPEPageSummary:
    page_index: int
    title: str
    element_count: int
    uri: str
    doc_ref: str | None = None


@wire_model
class DPEDocument(_DocumentMetadata):
    """Level 1 (`depth=metadata`, or `depth=pages` with the page index fields set)."""

    pages: list[DPEPageSummary] | None = None
    page_offset: int | None = None
    page_limit: int | None = None
    page_total: int | None = None

    __repr__ = _document_repr

    def to_summary(self, server: str) -> DPEDocumentSummary:
        metadata = {a.name: getattr(self, a.name) for a in fields_of(_DocumentMetadata)}
        return DPEDocumentSummary(server=server, **metadata)


@wire_model
class DPECatalogue:
    """Level 0: an MCP server's own document list."""

    documents: list[DPEDocument]
    total_count: int


@wire_model
class DPEElementDetail:
    """An element: inside a Level 2 page (short form) or alone at Level 3."""

    element_id: str
    category: str
    content: dict[str, Any]
    summary: str | None = None
    doc_ref: str | None = None
    page_index: int | None = None
    uri: str | None = None
    metadata: dict[str, Any] | None = None


@wire_model
class DPEPage:
    """Level 2: one page and its elements."""

    page_index: int
    title: str
    uri: str
    elements: list[DPEElementDetail] = empty_list()
    element_count: int = 0
    doc_ref: str | None = None

    def __repr__(self) -> str:
        return f"DPEPage({self.page_index}, {shorten(self.title, 60)!r}, {len(self.elements)} elements, uri={self.uri!r})"

    def _repr_html_(self) -> str:
        rows = [(e.element_id, e.category, e.summary) for e in self.elements]
        heading = f"<strong>{html.escape(self.title)}</strong> (page {self.page_index})"
        return heading + html_table(("element", "category", "summary"), rows, f"{len(self.elements)} elements")
