"""examples/notebooks/finder_walkthrough.ipynb, executed by a real Jupyter kernel: the
three roles start inside the kernel (whose main thread runs its own asyncio loop) and
the Finder is browsed with plain blocking calls, level by level.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from smcp_sync import Agent, Computer

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat, nbclient and ipykernel")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbformat, nbclient and ipykernel")
pytest.importorskip("ipykernel", reason="the notebook test needs nbformat, nbclient and ipykernel")

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.usefixtures("no_leaks"),
    pytest.mark.skipif(
        not (hasattr(Agent, "get_finder") and hasattr(Computer, "finder")),
        reason="the notebook browses the Finder: needs Agent.get_finder and the Computer's Finder (issue 6)",
    ),
]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "examples" / "notebooks"
DESIGN_NOTE = "Design note: the synchronous bridge to async MCP sessions"


def stdout(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def test_the_walkthrough_browses_the_finder_without_await():
    notebook = nbformat.read(NOTEBOOKS / "finder_walkthrough.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any failure
    cells = {cell.id: cell for cell in notebook.cells}

    header, *entries = stdout(cells["catalogue"]).splitlines()
    assert header == "5 documents"
    assert sorted(entries) == sorted(
        [
            "- 2026 年第一季度经营报告 (md, pages: 6)",
            f"- {DESIGN_NOTE} (md, pages: 5)",
            "- 产品评审会议纪要（2026-03-12） (md, pages: 4)",
            "- sales-2026-q1 (csv, pages: 1)",
            "- Release notes - document service 1.4 (txt, pages: 2)",
        ]
    )
    assert stdout(cells["search"]) == f"{DESIGN_NOTE}\ndpe://com.example.docs/design-note-sync-bridge-cb9062\n"
    assert stdout(cells["pages"]).splitlines() == [
        "How a blocking Computer drives many async MCP sessions from one private event loop without deadlocks.",
        "keywords: architecture, threading, asyncio, MCP",
        "page 0: Design note: the synchronous bridge (3 elements)",
        "page 1: Problem (2 elements)",
        "page 2: Decision (5 elements)",
        "page 3: Consequences (5 elements)",
        "page 4: References (3 elements)",
    ]

    [shown] = [o for o in cells["page"].outputs if o.output_type == "display_data"]
    markdown = shown.data["text/markdown"]
    assert markdown.startswith("## Decision\n\nAll MCP work runs on **one private event loop** in a daemon thread.")
    assert "```python\nfuture = asyncio.run_coroutine_threadsafe(" in markdown
    assert "| Thread | Owns | Blocks on |\n| --- | --- | --- |\n| caller | nothing shared |" in markdown
