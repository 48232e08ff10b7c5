"""Finder structures (spec/finder.md): the catalogue request/answer and the DPE levels.

`DPEDocument` is what an MCP server returns for Level 1 (and lists at Level 0);
`DPEDocumentSummary` is the catalogue entry a Computer returns, which adds `server`.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._fields import empty_list, wire_model

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


@wire_model
class DPEDocumentSummary(_DocumentMetadata):
    server: str


@wire_model
class GetFinderRet:
    documents: list[DPEDocumentSummary]
    total_count: int
    req_id: str


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

    def to_summary(self, server: str) -> DPEDocumentSummary:
        metadata = {a.name: getattr(self, a.name) for a in attrs.fields(_DocumentMetadata)}
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
