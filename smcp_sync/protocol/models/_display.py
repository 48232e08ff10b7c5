"""How results look in a notebook and at a prompt: short plain reprs, tables in Jupyter.

Jupyter shows an object by its `_repr_html_` / `_repr_markdown_` when it has one. The
models whose answers people read (a Finder page, a document, a tool result) get them, and
`ToolList` / `SessionList` (what `Agent.get_tools` and `Agent.list_room` return, kept
beside their models: plain lists otherwise) show as a table made here. Every value comes from a peer, so the HTML escapes it
and the Markdown escapes the characters that would otherwise be markup (``|``, ``<``,
``&``, backticks...). Plain reprs name the type and the few fields that tell instances
apart, never a whole schema or catalogue.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable, Sequence

#: Characters of a cell value shown before it is cut with an ellipsis.
CELL_WIDTH = 120
#: Items a short repr names before "...".
NAMED_IN_REPR = 3

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")


def shorten(text: Any, width: int = CELL_WIDTH) -> str:
    """`text` on one line, cut to `width` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def named(items: Iterable[Any]) -> str:
    """The first few of `items` as reprs, then "..." if there are more."""
    items = list(items)
    shown = ", ".join(repr(shorten(item, 40)) for item in items[:NAMED_IN_REPR])
    return shown + (", ..." if len(items) > NAMED_IN_REPR else "")


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_html_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    shown = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{shown}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    lines = [f"**{markdown_escape(caption)}**", ""] if caption else []
    lines.append("| " + " | ".join(markdown_escape(h) for h in headers) + " |")
    lines.append("|" + "---|" * len(headers))
    lines += ["| " + " | ".join(_markdown_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_escape(text: Any) -> str:
    """`text` on one line as literal Markdown: markup characters backslashed, ``<`` and
    ``&`` as entities (Markdown passes HTML through)."""
    flat = html.escape(shorten(text), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _html_cell(value: Any) -> str:
    return html.escape(shorten(_cell_text(value)))


def _markdown_cell(value: Any) -> str:
    return markdown_escape(_cell_text(value))


class MarkdownText(str):
    """A page, document or element rendered as Markdown (``format="markdown"``): a `str`
    that Jupyter displays as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""
