"""Plain-text files → pages of paragraphs.

Why these rules: plain text has no markup, only two conventions worth honouring: a form
feed (``\\f``, the classic page break of printers and RFCs) starts a new page, and blank
lines separate paragraphs. Every paragraph is a text element. The first line is the
document title (the file name when it is too long to be one), each page is titled by its
first line, and the first paragraph after the title is the summary.
"""

from __future__ import annotations

from itertools import groupby
from typing import Iterator

from .parsed_document import Block, ParsedDocument, Section, lines_of, shorten

MAX_TITLE = 80
SUMMARY_LENGTH = 160


def parse_text(text: str, fallback_title: str) -> ParsedDocument:
    pages: list[list[Block]] = [[] for _ in range(text.count("\f") + 1)]
    pieces = list(_pieces(lines_of(text)))
    for (page, filled), run in groupby(pieces, key=lambda piece: (piece[0], bool(piece[2].strip()))):
        if filled:
            lines = list(run)
            body = "\n".join(line.rstrip() for _, _, line in lines)
            source = {"source_lines": f"{lines[0][1]}-{lines[-1][1]}"}
            pages[page].append(Block("text", {"text": body}, shorten(body), source))
    first_line = next((line.strip() for _, _, line in pieces if line.strip()), "")
    title = first_line if first_line and len(first_line) <= MAX_TITLE else fallback_title
    summary = next((b.content["text"] for page in pages for b in page if b.content["text"] != title), None)
    return ParsedDocument(
        title=title,
        sections=tuple(Section(_page_title(blocks, title, i), tuple(blocks)) for i, blocks in enumerate(pages)),
        summary=shorten(summary, SUMMARY_LENGTH) if summary else None,
    )


def _pieces(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """(page index, line number, text) of every line; a form feed inside a line splits it
    and moves the rest to the next page."""
    page = 0
    for number, line in enumerate(lines, 1):
        for k, piece in enumerate(line.split("\f")):
            page += k > 0
            yield page, number, piece


def _page_title(blocks: list[Block], title: str, index: int) -> str:
    if not blocks:
        return f"{title} ({index + 1})"
    return shorten(blocks[0].content["text"].split("\n")[0], MAX_TITLE)
