"""DPE documents, pages and elements as Markdown or plain text, for people and LLMs.

Markdown follows spec/finder.md "Markdown 渲染规则" per element category. Plain text is
the same rendering without markup: headings, fences, table pipes and link/image syntax
drop away, tables become tab-separated lines, lists keep their ``1.`` / ``-`` markers
(they are plain text too), and the bracketed labels of the spec (``[图表: ...]``,
``[图片: ...]``, ``[category: summary]``) stay because they are readable as they are.

An element's `content` comes from an MCP server and has no schema beyond the spec's
examples, so every field is optional: an element whose content lacks what its category
needs is rendered like an unknown category, ``[{category}: {summary}]``; rendering never
raises on odd content. A page renders as its elements separated by blank lines (its
title is metadata the caller shows as it likes); a document renders as its metadata,
summary and, for ``depth=pages``, its page index.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Union

from ..protocol.models import DPEDocument, DPEElementDetail, DPEPage, DPEPageSummary

Renderable = Union[DPEDocument, DPEPage, DPEElementDetail]


def render_markdown(item: Renderable) -> str:
    """A document (Level 1), page (Level 2) or element (Level 3) as Markdown."""
    return _render(item, markdown=True)


def render_text(item: Renderable) -> str:
    """A document (Level 1), page (Level 2) or element (Level 3) as plain text."""
    return _render(item, markdown=False)


def _render(item: Renderable, markdown: bool) -> str:
    if isinstance(item, DPEElementDetail):
        return _element(item, markdown)
    if isinstance(item, DPEPage):
        return "\n\n".join(_element(element, markdown) for element in item.elements)
    if isinstance(item, DPEDocument):
        return _document(item, markdown)
    raise TypeError(f"cannot render {type(item).__name__}; expected DPEDocument, DPEPage or DPEElementDetail")


# -- elements --------------------------------------------------------------------------


def _element(element: DPEElementDetail, markdown: bool) -> str:
    render = _BY_CATEGORY.get(element.category)
    rendered = render(element.content, element.summary, markdown) if render else None
    if rendered is None:
        rendered = f"[{element.category}: {_one_line(element.summary or element.element_id)}]"
    return rendered


def _field(content: Mapping[str, Any], *keys: str) -> str | None:
    """The first of `keys` holding a non-empty string or a number, as a string."""
    for key in keys:
        value = content.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _heading(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    text = _field(content, "text") or summary
    if not text:
        return None
    level = content.get("level")
    level = min(max(level, 1), 6) if isinstance(level, int) and not isinstance(level, bool) else 1
    return "#" * level + " " + _one_line(text) if markdown else _one_line(text)


def _text(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    return _field(content, "text")


def _table(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    headers, rows = content.get("headers"), content.get("rows")
    headers = headers if isinstance(headers, list) else []
    rows = [row for row in rows if isinstance(row, list)] if isinstance(rows, list) else []
    if not headers and not rows:
        return None
    if not markdown:
        lines = ([headers] if headers else []) + rows
        return "\n".join("\t".join(_one_line(_cell(value)) for value in line) for line in lines)
    width = max(len(row) for row in [headers, *rows])
    lines = [headers + [""] * (width - len(headers)), ["---"] * width]
    lines += [row + [""] * (width - len(row)) for row in rows]
    return "\n".join("| " + " | ".join(_markdown_cell(value) for value in line) + " |" for line in lines)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _markdown_cell(value: Any) -> str:
    """A Markdown table cell: pipes escaped, line breaks as <br> (a raw one ends the row)."""
    return _cell(value).replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")


def _list(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    items = content.get("items")
    if not isinstance(items, list) or not items:
        return None
    return "\n".join(_list_lines(items, bool(content.get("ordered")), ""))


def _list_lines(items: list[Any], ordered: bool, indent: str) -> list[str]:
    """Items are strings (or numbers); a nested list is a sub-list of the item before it."""
    lines: list[str] = []
    number = 0
    for item in items:
        if isinstance(item, list):
            lines += _list_lines(item, ordered, indent + (" " * 3 if ordered else " " * 2))
            continue
        number += 1
        marker = f"{number}." if ordered else "-"
        lines.append(f"{indent}{marker} {_one_line(_cell(item))}")
    return lines


def _code(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    code = _field(content, "code", "text")
    if code is None or not markdown:
        return code
    fence = "`" * max(3, _longest_backtick_run(code) + 1)
    return f"{fence}{_field(content, 'language') or ''}\n{code}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _chart(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    title, data = _field(content, "title") or summary, _field(content, "data_summary")
    if title is None and data is None:
        return None
    return f"[图表: {_one_line(title or '')}] {data or ''}".rstrip()


def _image(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    url = _field(content, "url", "src")
    description = _field(content, "description") or summary
    alt = _field(content, "alt") or description or ""
    if markdown and url:
        return f"![{_bracketed(alt)}]({_destination(url)})"
    label = description or alt
    if not label and not url:
        return None
    return f"[图片: {_one_line(label)}]" + (f" {url}" if url and not markdown else "")


def _link(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    url = _field(content, "url", "href")
    if url is None:
        return None
    text = _field(content, "text") or url
    if markdown:
        return f"[{_bracketed(text)}]({_destination(url)})"
    return url if text == url else f"{_one_line(text)} ({url})"


def _formula(content: Mapping[str, Any], summary: str | None, markdown: bool) -> str | None:
    expression = _field(content, "expression")
    if expression is None or not markdown:
        return expression
    return f"$ {expression} $"


def _bracketed(text: str) -> str:
    """Text inside Markdown ``[...]``: one line, brackets escaped."""
    return _one_line(text).replace("[", "\\[").replace("]", "\\]")


def _destination(url: str) -> str:
    """A link destination; ``<...>`` when spaces or parentheses would end it early."""
    return f"<{url}>" if any(char in url for char in " ()") else url


_BY_CATEGORY: dict[str, Callable[[Mapping[str, Any], Union[str, None], bool], Union[str, None]]] = {
    "heading": _heading,
    "text": _text,
    "table": _table,
    "list": _list,
    "code": _code,
    "chart": _chart,
    "image": _image,
    "link": _link,
    "formula": _formula,
}


# -- documents -------------------------------------------------------------------------


def _document(doc: DPEDocument, markdown: bool) -> str:
    facts = [
        ("uri", doc.uri),
        ("file_uri", doc.file_uri),
        ("file_type", doc.file_type),
        ("page_count", str(doc.page_count)),
        ("keywords", ", ".join(doc.keywords) if doc.keywords else None),
        ("last_modified", doc.last_modified),
    ]
    bullet = "- " if markdown else ""
    blocks = [
        ("# " if markdown else "") + _one_line(doc.title),
        "\n".join(f"{bullet}{key}: {_one_line(value)}" for key, value in facts if value),
    ]
    if doc.summary:
        blocks.append(doc.summary)
    if doc.pages is not None:
        blocks.append(_page_index(doc, doc.pages, markdown))
    return "\n\n".join(blocks)


def _page_index(doc: DPEDocument, pages: list[DPEPageSummary], markdown: bool) -> str:
    start = doc.page_offset or 0
    total = doc.page_total if doc.page_total is not None else doc.page_count
    if pages:
        label = f"Pages {start}–{start + len(pages) - 1} of {total}"
    else:
        label = f"Pages: none from {start} (of {total})"
    if not markdown:
        lines = [f"page {p.page_index}: {_one_line(p.title)} ({p.element_count} elements) {p.uri}" for p in pages]
        return "\n".join([label + ":", *lines])
    if not pages:
        return "## " + label
    table = _table(
        {
            "headers": ["page_index", "title", "element_count", "uri"],
            "rows": [[p.page_index, p.title, p.element_count, p.uri] for p in pages],
        },
        None,
        True,
    )
    return f"## {label}\n\n{table}"
