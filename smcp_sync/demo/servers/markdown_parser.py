"""Markdown text → DPE pages and elements, with the standard library only.

Why hand-written: the documents server needs block structure (which element is a table,
a list, a code block...), not HTML, and a Markdown library would be a new dependency for
an example. This reads the block-level subset real notes and reports use: front matter,
ATX and setext headings, paragraphs, bullet and ordered lists (nested by indentation),
fenced code (```` ``` ```` / ``~~~``), GFM pipe tables, block quotes, ``$$`` math,
thematic breaks, and a paragraph that is only an image ``![alt](url)`` or only a link
``[text](url)``. Inline markup is kept verbatim inside the text. Anything unrecognised
is a paragraph, so no input is an error.

Pages: a new page starts at every H1 or H2 heading (the heading is the page's first
element and its title); content before the first one is a page titled after the
document. Document title: front matter ``title``, else the first H1, else the file
name. Keywords: front matter ``keywords`` (or ``tags``), else the page titles. Summary:
front matter ``summary`` (or ``description``), else the first paragraph.
Each element's Level 3 `metadata` says which lines of the file it came from.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Union

from .front_matter import split_front_matter
from .parsed_document import Block, ParsedDocument, Section, lines_of, shorten, table_block

PAGE_HEADING_LEVEL = 2
MAX_DERIVED_KEYWORDS = 8
SUMMARY_LENGTH = 160

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_ITEM = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_PIPE = re.compile(r"(?<!\\)\|")
_IMAGE = re.compile(r'^!\[([^\]]*)\]\(\s*<?([^\s>)]+)>?(?:\s+"([^"]*)")?\s*\)$')
_LINK = re.compile(r'^\[([^\]]+)\]\(\s*<?([^\s>)]+)>?(?:\s+"([^"]*)")?\s*\)$')

ListItems = list[Union[str, "ListItems"]]


def parse_markdown(text: str, fallback_title: str) -> ParsedDocument:
    lines = lines_of(text)
    fields, body_start = split_front_matter(lines)
    blocks = _Reader(lines, body_start).blocks()
    first_h1 = next((b.content["text"] for b in blocks if b.category == "heading" and b.content["level"] == 1), None)
    title = _text_field(fields, "title") or first_h1 or fallback_title
    sections = _pages(blocks, title)
    return ParsedDocument(
        title=title,
        sections=sections,
        keywords=_keywords(fields) or _derived_keywords(sections, title),
        summary=_summary(fields, blocks),
    )


def _pages(blocks: list[Block], title: str) -> tuple[Section, ...]:
    sections: list[Section] = []
    page_blocks: list[Block] = []
    page_title = title
    for block in blocks:
        if block.category == "heading" and block.content["level"] <= PAGE_HEADING_LEVEL:
            if page_blocks:
                sections.append(Section(page_title, tuple(page_blocks)))
            page_title, page_blocks = block.content["text"], []
        page_blocks.append(block)
    if page_blocks or not sections:
        sections.append(Section(page_title, tuple(page_blocks)))
    return tuple(sections)


def _text_field(fields: dict[str, Any], *keys: str) -> str | None:
    return next((fields[k] for k in keys if isinstance(fields.get(k), str) and fields[k]), None)


def _keywords(fields: dict[str, Any]) -> tuple[str, ...] | None:
    value = fields.get("keywords", fields.get("tags"))
    if isinstance(value, str):
        value = re.split(r"[,，]", value)
    words = tuple(w.strip() for w in value or () if w.strip())
    return words or None


def _derived_keywords(sections: tuple[Section, ...], title: str) -> tuple[str, ...] | None:
    titles = [s.title for s in sections if s.title != title]
    return tuple(dict.fromkeys(titles))[:MAX_DERIVED_KEYWORDS] or None


def _summary(fields: dict[str, Any], blocks: list[Block]) -> str | None:
    given = _text_field(fields, "summary", "description")
    if given:
        return given
    first = next((b for b in blocks if b.category == "text"), None)
    return shorten(first.content["text"], SUMMARY_LENGTH) if first else None


class _Reader:
    """Reads blocks from `lines` starting at line index `start`; `self.i` is the cursor."""

    def __init__(self, lines: list[str], start: int) -> None:
        self.lines = lines
        self.i = start
        self._openers: list[Callable[[str], Block | None]] = [
            self._fence, self._math, self._heading, self._break, self._table, self._list, self._quote,
        ]  # fmt: skip

    def blocks(self) -> list[Block]:
        blocks: list[Block] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                self.i += 1
                continue
            block = next((b for b in (opener(line) for opener in self._openers) if b is not None), None)
            blocks.append(block or self._paragraph())
        return blocks

    def _block(self, start: int, category: str, content: dict[str, Any], summary: str) -> Block:
        return Block(category, content, summary, self._source(start))

    def _source(self, start: int) -> dict[str, Any]:
        """Metadata of a block spanning lines `start` .. `self.i - 1` (0-based) of the file."""
        return {"source_lines": f"{start + 1}-{self.i}"}

    def _starts_block(self, line: str) -> bool:
        """Whether `line` interrupts a paragraph."""
        return bool(
            _FENCE.match(line) or _ATX.match(line) or _BREAK.match(line) or _QUOTE.match(line)
            or _ITEM.match(line) or line.strip().startswith("$$")
        )  # fmt: skip

    # -- openers: each returns None (cursor untouched) or a block (cursor after it) ----

    def _fence(self, line: str) -> Block | None:
        match = _FENCE.match(line)
        if not match:
            return None
        start, indent, fence, language = self.i, len(match.group(1)), match.group(2), match.group(3)
        code: list[str] = []
        self.i += 1
        while self.i < len(self.lines):
            current = self.lines[self.i]
            self.i += 1
            stripped = current.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            code.append(current[min(indent, len(current) - len(current.lstrip(" "))) :])
        content: dict[str, Any] = {"code": "\n".join(code)}
        if language:
            content["language"] = language
        return self._block(start, "code", content, f"{language or 'code'} code, {len(code)} lines")

    def _math(self, line: str) -> Block | None:
        stripped = line.strip()
        if not stripped.startswith("$$"):
            return None
        start = self.i
        self.i += 1
        if len(stripped) > 4 and stripped.endswith("$$"):
            expression = stripped[2:-2].strip()
        else:
            body = [stripped[2:]]
            while self.i < len(self.lines):
                current = self.lines[self.i].strip()
                self.i += 1
                if current.endswith("$$"):
                    body.append(current[:-2])
                    break
                body.append(current)
            expression = "\n".join(part for part in body if part.strip()).strip()
        return self._block(start, "formula", {"expression": expression}, shorten(expression))

    def _heading(self, line: str) -> Block | None:
        match = _ATX.match(line)
        if not match or not match.group(2).strip():
            return None
        self.i += 1
        return self._heading_block(self.i - 1, len(match.group(1)), match.group(2).strip())

    def _heading_block(self, start: int, level: int, text: str) -> Block:
        return self._block(start, "heading", {"level": level, "text": text}, shorten(text))

    def _break(self, line: str) -> Block | None:
        if not _BREAK.match(line):
            return None
        self.i += 1
        return self._block(self.i - 1, "separator", {}, "horizontal rule")

    def _table(self, line: str) -> Block | None:
        if self.i + 1 >= len(self.lines) or "|" not in line:
            return None
        delimiter = self.lines[self.i + 1]
        headers = _cells(line)
        if not _DELIMITER_ROW.match(delimiter) or len(_cells(delimiter)) != len(headers):
            return None
        start = self.i
        self.i += 2
        rows = []
        while self.i < len(self.lines) and self.lines[self.i].strip() and "|" in self.lines[self.i]:
            rows.append(_cells(self.lines[self.i]))
            self.i += 1
        return table_block(headers, rows, self._source(start))

    def _list(self, line: str) -> Block | None:
        match = _ITEM.match(line)
        if not match or len(match.group(1)) > 3:
            return None
        start = self.i
        ordered = match.group(2)[0].isdigit()
        items = self._items(len(match.group(1)))
        top_level = [item for item in items if isinstance(item, str)]
        summary = shorten(f"{len(top_level)} items: {top_level[0]}") if top_level else "empty list"
        return self._block(start, "list", {"ordered": ordered, "items": items}, summary)

    def _items(self, indent: int) -> ListItems:
        """Items at `indent`; a more indented item starts a nested list (a sub-list of
        the item before it), a more indented plain line continues the previous item."""
        items: ListItems = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                following = self._next_nonblank()
                if following is None or _indent(self.lines[following]) < indent:
                    break
                if not _ITEM.match(self.lines[following]) and _indent(self.lines[following]) <= indent:
                    break
                self.i = following
                continue
            match = _ITEM.match(line)
            if match and len(match.group(1)) < indent:
                break
            if match and len(match.group(1)) > indent and items:
                items.append(self._items(len(match.group(1))))
            elif match:
                items.append(match.group(3).strip())
                self.i += 1
            elif _indent(line) > indent and items and isinstance(items[-1], str):
                items[-1] = f"{items[-1]} {line.strip()}"
                self.i += 1
            else:
                break
        return items

    def _next_nonblank(self) -> int | None:
        return next((j for j in range(self.i, len(self.lines)) if self.lines[j].strip()), None)

    def _quote(self, line: str) -> Block | None:
        if not _QUOTE.match(line):
            return None
        start, quoted = self.i, []
        while self.i < len(self.lines):
            match = _QUOTE.match(self.lines[self.i])
            if not match:
                break
            quoted.append(match.group(1))
            self.i += 1
        text = "\n".join(quoted).strip()
        return self._block(start, "text", {"text": text, "quote": True}, shorten(text))

    def _paragraph(self) -> Block:
        start, lines = self.i, [self.lines[self.i].strip()]
        self.i += 1
        while self.i < len(self.lines) and self.lines[self.i].strip():
            line = self.lines[self.i]
            setext = _SETEXT.match(line)
            if setext:
                self.i += 1
                return self._heading_block(start, 1 if setext.group(1)[0] == "=" else 2, " ".join(lines))
            if self._starts_block(line) or self._is_table_start():
                break
            lines.append(line.strip())
            self.i += 1
        text = "\n".join(lines)
        image, link = _IMAGE.match(text), _LINK.match(text)
        if image:
            alt, url, title = image.groups()
            content = {"alt": alt, "url": url, **({"title": title} if title else {})}
            return self._block(start, "image", content, shorten(alt or title or url))
        if link:
            label, url, title = link.groups()
            content = {"text": label, "url": url, **({"title": title} if title else {})}
            return self._block(start, "link", content, shorten(label))
        return self._block(start, "text", {"text": text}, shorten(text))

    def _is_table_start(self) -> bool:
        """A table may follow a paragraph line directly (GFM)."""
        following = self.lines[self.i + 1] if self.i + 1 < len(self.lines) else ""
        return "|" in self.lines[self.i] and bool(_DELIMITER_ROW.match(following)) and "-" in following


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _cells(line: str) -> list[str]:
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(row)]
