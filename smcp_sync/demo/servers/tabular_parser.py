"""CSV and TSV files → one page holding one table element.

Why one page: a CSV file is a single sheet; its rows are the table, not pages. The first
row is the header. Blank rows are skipped; short rows are padded to the header's width.
The element's Level 3 `metadata.source_range` is the spreadsheet range the table would
occupy (``A1:E13``), like the spec's example. Title is the file name; keywords are the
column headers; the summary states the size.
"""

from __future__ import annotations

import csv
import io

from .parsed_document import ParsedDocument, Section, table_block

MAX_KEYWORDS = 8


def parse_table(text: str, title: str, delimiter: str) -> ParsedDocument:
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(cell.strip() for cell in row)]
    if not rows:
        return ParsedDocument(title=title, sections=(Section(title, ()),), summary="empty table")
    headers, data = [cell.strip() for cell in rows[0]], rows[1:]
    table = table_block(headers, data, {"source_range": f"A1:{column_letters(len(headers))}{len(rows)}"})
    return ParsedDocument(
        title=title,
        sections=(Section(title, (table,)),),
        keywords=tuple(h for h in headers if h)[:MAX_KEYWORDS] or None,
        summary=f"Table of {len(data)} rows × {len(headers)} columns: {', '.join(headers)}",
    )


def column_letters(count: int) -> str:
    """Spreadsheet name of column number `count` (1 → A, 26 → Z, 27 → AA)."""
    letters = ""
    while count > 0:
        count, remainder = divmod(count - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters
