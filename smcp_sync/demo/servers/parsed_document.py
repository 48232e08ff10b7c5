"""What a file parser produces: a document as sections (future pages) of blocks (future
elements), before any URI, doc_ref or element id exists.

Why a separate stage: the parsers (Markdown, CSV, plain text) only know a file's text;
the document library adds identity (doc_ref, element ids) and the views add URIs. Each
block already has its DPE category (spec/finder.md, 元素类型) and a `content` dict in
the shape `smcp_sync.context.dpe_render` renders (``{"text"}``, ``{"level", "text"}``,
``{"headers", "rows"}``, ``{"ordered", "items"}``, ``{"language", "code"}``...).
"""

from __future__ import annotations

from typing import Any

import attrs

#: Element-id prefixes per category; ids are ``{prefix}-{n:03d}``, numbered per document.
ID_PREFIXES = {
    "heading": "h",
    "text": "txt",
    "list": "list",
    "code": "code",
    "table": "tbl",
    "image": "img",
    "link": "link",
    "formula": "fml",
    "separator": "sep",
}


@attrs.frozen
class Block:
    """One element-to-be: its category, renderable content, a short summary, and where it
    came from in the file (`metadata`, shown at Level 3)."""

    category: str
    content: dict[str, Any]
    summary: str
    metadata: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Section:
    """One page-to-be."""

    title: str
    blocks: tuple[Block, ...]


@attrs.frozen
class ParsedDocument:
    title: str
    sections: tuple[Section, ...]
    keywords: tuple[str, ...] | None = None
    summary: str | None = None


@attrs.frozen
class Element:
    """A block with its document-wide id and the page it is on."""

    element_id: str
    page_index: int
    block: Block


def number_elements(sections: tuple[Section, ...]) -> tuple[tuple[Element, ...], ...]:
    """Element ids, stable for a given file content: a category prefix and a per-document,
    per-category counter in reading order (``h-001``, ``txt-001``, ``tbl-001``...)."""
    counters: dict[str, int] = {}
    pages = []
    for page_index, section in enumerate(sections):
        elements = []
        for block in section.blocks:
            prefix = ID_PREFIXES.get(block.category, block.category)
            counters[prefix] = counters.get(prefix, 0) + 1
            elements.append(Element(f"{prefix}-{counters[prefix]:03d}", page_index, block))
        pages.append(tuple(elements))
    return tuple(pages)


def table_block(headers: list[str], rows: list[list[str]], metadata: dict[str, Any]) -> Block:
    """A table element; rows are padded or cut to the header's width (as GFM does)."""
    width = len(headers)
    rows = [(row + [""] * width)[:width] for row in rows]
    summary = f"{', '.join(headers)} ({len(rows)} rows × {width} columns)"
    return Block("table", {"headers": headers, "rows": rows}, shorten(summary), metadata)


def lines_of(text: str) -> list[str]:
    """The lines of `text` as editors number them (`str.splitlines` would also split at
    form feeds and other separators, shifting every line number after them)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def shorten(text: str, limit: int = 80) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
