"""The SKILL packages the demo's tools server offers (spec-0.3/skill.md §3, mode
``resources``): each package is a ``skill://com.example.tools/<skill>`` root whose
``_meta.source`` is ``resources``, and each of its files a resource below it, so the
Computer stages them without sharing a folder with this server.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

HOST = "com.example.tools"

SKILLS: dict[str, dict[str, str]] = {
    "quarterly-average": {
        "SKILL.md": """---
name: quarterly-average
description: Averages the monthly figures of a quarterly sales table with the calculate tool.
license: MIT
allowed-tools: [read_document, calculate]
---
# Quarterly average

1. Read `sales-2026-q1.csv` with `read_document`.
2. Add the monthly totals and divide by their number with `calculate`,
   e.g. `(1260 + 1305 + 1615) / 3`.
3. Report the average with two decimals; see `references/rounding.md`.
""",
        "references/rounding.md": "# Rounding\n\nRound half away from zero; keep the unit of the table.\n",
    },
    "document-digest": {
        "SKILL.md": """---
name: document-digest
description: Writes a five-line digest of one of the sample documents.
allowed-tools: [list_documents, read_document, text_stats]
---
# Document digest

List the documents, read the one asked for, and answer with five lines:
title, length (from `text_stats`), and the three points that matter most.
""",
    },
}


def add_skills(server: MCPServer, version: str) -> None:
    """List every package of `SKILLS` on `server`: its root, then its files."""
    for skill, files in SKILLS.items():
        root = f"skill://{HOST}/{skill}"
        meta = {"source": "resources", "version": version}
        server.resource(root, name=skill, mime_type="text/markdown", meta=meta)(_text(files["SKILL.md"]))
        for rel_path, text in files.items():
            server.resource(f"{root}/{rel_path}", name=f"{skill}/{rel_path}", mime_type="text/markdown")(_text(text))


def _text(text: str) -> Any:
    def read() -> str:
        return text

    return read
