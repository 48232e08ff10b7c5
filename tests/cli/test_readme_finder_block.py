"""The *Desktop and Finder* block of docs/agent.md runs as written against the demo's Computer
(the bundled documents): its keywords, doc_ref, element id and completion prefix match."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smcp_sync.demo.stage import DemoStage, StageSettings
from smcp_sync.protocol.models import DPEDocument, DPEElementDetail

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

AGENT_PAGE = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


def finder_block() -> str:
    section = AGENT_PAGE.read_text(encoding="utf-8").split("## Desktop and Finder", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has a Python block"
    return match.group(1)


def test_the_finder_block_runs_against_the_demo_computer() -> None:
    with DemoStage(StageSettings()) as stage:
        stage.release_agent()  # the block's own Agent joins, as with `smcp-sync demo --serve`
        names: dict = {}
        code = finder_block().replace("http://127.0.0.1:8000", stage.url)  # the block's `--port 8000`
        try:
            exec(compile(code, "docs/agent.md (Desktop and Finder)", "exec"), names)
        finally:
            if "agent" in names:
                names["agent"].close()
    assert names["computer"] == stage.computer_name
    assert [d.title for d in names["page"].documents] == ["Design note: the synchronous bridge to async MCP sessions"]
    assert isinstance(names["doc"], DPEDocument) and names["doc"].pages
    assert isinstance(names["element"], DPEElementDetail) and names["element"].category == "table"
    assert names["md"].startswith("#")
