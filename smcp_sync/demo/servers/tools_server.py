"""An MCP server (stdio) with a handful of useful, deterministic tools for the demo.

    python -m smcp_sync.demo.servers.tools_server [--root DIR]

    --root DIR   the folder `list_documents` / `read_document` read (default: the bundled
                 sample documents, the same folder the documents server serves)

Tools (all read-only; a refused input is a tool result with ``isError: true`` whose
text says what was wrong):

    calculate(expression)              -> the value, e.g. "(1260 + 1305 + 1615) / 3" -> "1393.33333333"
    text_stats(text)                   -> {characters, non_space_characters, cjk_characters,
                                           words, lines, paragraphs} (structured)
    current_time(utc_offset="+00:00")  -> "YYYY-MM-DDTHH:MM:SS+HH:MM" (ISO 8601, seconds)
    list_documents()                   -> the document files under --root (relative paths)
    read_document(path, max_characters=20000)
                                       -> the text of one of them, cut to max_characters
                                          with a closing note saying how much was left out

Skills (spec-0.3/skill.md): two SKILL packages served as resources (`demo_skills`).

Built on mcp's ``MCPServer`` (unlike the resource servers, nothing here needs
``resources.subscribe``): argument validation comes from the type hints.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from .. import SAMPLE_DOCUMENTS
from .arithmetic import ArithmeticRefused, evaluate, format_number
from .demo_skills import add_skills
from .document_library import FORMATS, servable_files
from smcp_sync import __version__

MAX_READ = 100_000
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

_OFFSET = re.compile(r"([+-])(\d{2}):(\d{2})")
_WORD = re.compile(r"[^\W\d_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]+(?:['’-][^\W_]+)*|\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class TextStats(TypedDict):
    characters: int
    non_space_characters: int
    cjk_characters: int
    words: int
    lines: int
    paragraphs: int


def text_statistics(text: str) -> TextStats:
    """Counts for mixed Chinese/English text: a CJK character is not a word, so the two
    are counted apart; `words` counts runs of other letters (with ' and -) and numbers."""
    return TextStats(
        characters=len(text),
        non_space_characters=sum(not c.isspace() for c in text),
        cjk_characters=len(_CJK.findall(text)),
        words=len(_WORD.findall(text)),
        lines=len(text.splitlines()),
        paragraphs=len([p for p in re.split(r"\n\s*\n", text) if p.strip()]),
    )


def time_at_offset(utc_offset: str) -> str:
    match = _OFFSET.fullmatch(utc_offset)
    if not match or int(match.group(3)) >= 60 or int(match.group(2)) * 60 + int(match.group(3)) > 14 * 60:
        raise ToolError(f"utc_offset must look like +08:00 or -05:30 (at most ±14:00), got {utc_offset!r}")
    sign = -1 if match.group(1) == "-" else 1
    zone = timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3))))
    return datetime.now(zone).isoformat(timespec="seconds")


def build_server(root: Path) -> MCPServer:
    server = MCPServer(
        "tools",
        version=__version__,
        instructions="Deterministic helper tools: arithmetic, text statistics, the time, and the sample documents.",
        log_level="WARNING",
    )

    add_skills(server, __version__)

    @server.tool(annotations=READ_ONLY)
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression such as "(1260 + 1305 + 1615) / 3" or "sqrt(2) * pi"."""
        try:
            return format_number(evaluate(expression))
        except ArithmeticRefused as exc:
            raise ToolError(str(exc)) from None

    @server.tool(annotations=READ_ONLY)
    def text_stats(text: str) -> TextStats:
        """Count characters, CJK characters, words, lines and paragraphs of a text."""
        return text_statistics(text)

    @server.tool(annotations=READ_ONLY)
    def current_time(utc_offset: str = "+00:00") -> str:
        """The current time at a UTC offset (+HH:MM or -HH:MM), e.g. 2026-03-12T14:05:09+08:00."""
        return time_at_offset(utc_offset)

    @server.tool(annotations=READ_ONLY)
    def list_documents() -> list[str]:
        """The document files (Markdown, CSV, TSV, text) that read_document can read."""
        return [path.relative_to(root).as_posix() for path in servable_files(root)]

    @server.tool(annotations=READ_ONLY)
    def read_document(path: str, max_characters: Annotated[int, Field(ge=1, le=MAX_READ)] = 20_000) -> str:
        """The text of one document listed by list_documents (a path relative to the folder)."""
        text = _document_text(root, path)
        if len(text) <= max_characters:
            return text
        return f"{text[:max_characters]}\n\n[truncated: {max_characters} of {len(text)} characters shown]"

    return server


def _document_text(root: Path, relative: str) -> str:
    """The text of `relative` under `root`; refuses anything list_documents would not list
    (other folders, hidden files, other file types). Messages name only `relative`."""
    candidate = (root / relative).resolve()
    listed = candidate.is_relative_to(root) and candidate in set(servable_files(root))
    if not listed:
        suffixes = ", ".join(sorted(FORMATS))
        raise ToolError(f"no document {relative!r}; expected a path from list_documents (files {suffixes})")
    try:
        return candidate.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolError(f"cannot read {relative!r}: {type(exc).__name__}") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=SAMPLE_DOCUMENTS, help="folder of read_document")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root} is not a folder")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(levelname)s: %(message)s")
    build_server(args.root.resolve()).run("stdio")


if __name__ == "__main__":
    main()
