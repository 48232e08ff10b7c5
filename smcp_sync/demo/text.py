"""Shortening long texts for a terminal: the demo shows documents, windows and tool
descriptions of any length, and a walkthrough is only readable if each stays short."""

from __future__ import annotations

#: Widest line the demo prints (before its indentation).
LINE_WIDTH = 96


def shorten(text: str, width: int = LINE_WIDTH) -> str:
    """`text` on one line, cut to `width` characters with "…" when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def excerpt(text: str, max_lines: int, width: int = LINE_WIDTH) -> list[str]:
    """The first `max_lines` lines of `text`, each cut to `width`, and a last line
    saying how many more there were."""
    lines = text.rstrip().splitlines()
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"… ({len(lines) - max_lines} more lines)")
    return shown


def first_line(text: str | None) -> str:
    """The first non-empty line of a description (tools describe themselves at length)."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
