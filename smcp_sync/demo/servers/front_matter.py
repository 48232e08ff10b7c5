"""The YAML-style front matter at the top of a Markdown file, read without a YAML library.

Why not PyYAML: the documents server only needs ``title``, ``keywords`` and ``summary``,
and a dependency for three keys would not earn its place. Supported is the subset such
headers use in practice::

    ---
    title: "Quoted or plain text"
    keywords: [inline, list]      # or a block list:
    tags:
      - one
      - two
    ---

Anything else (nested maps, multi-line strings) is ignored line by line, never an error:
a document with odd front matter is still served, just without those fields.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_ITEM = re.compile(r"^\s+-\s+(.*?)\s*$")
_FENCES = ("---", "...")


def split_front_matter(lines: list[str]) -> tuple[dict[str, str | list[str]], int]:
    """The front matter's fields, and how many lines it spans (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in _FENCES), None)
    if end is None:
        return {}, 0
    return _fields(lines[1:end]), end + 1


def _fields(lines: list[str]) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {}
    current: str | None = None
    for line in lines:
        item = _ITEM.match(line)
        if item and current is not None:
            previous = fields.get(current)
            fields[current] = [*(previous if isinstance(previous, list) else []), _unquote(item.group(1))]
            continue
        key = _KEY.match(line)
        if not key:
            current = None
            continue
        current, value = key.group(1).lower(), key.group(2)
        if value.startswith("[") and value.endswith("]"):
            fields[current] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
        elif value:
            fields[current] = _unquote(value)
    return fields


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
