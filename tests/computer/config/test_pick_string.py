"""pickString options as plain strings (0.1.x) or ``{label, value}`` objects (protocol
0.3.2): the value is what a placeholder receives, through `input_values` and through the
CLI's prompt (a real terminal: a pty), where the labels are shown and picked by number."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from smcp_sync.computer import InputError
from smcp_sync.computer.config.inputs import InputResolver
from smcp_sync.protocol import MCPServerInput, from_wire, to_wire
from smcp_sync.server import SMCPServer

from ..helpers import stdio_config

pytestmark = pytest.mark.timeout(60)

REGION = {
    "type": "pickString",
    "id": "region",
    "description": "Region",
    "options": [{"label": "Europe", "value": "eu_"}, {"label": "United States", "value": "us_"}, "local_"],
}


def test_options_load_as_written_and_values_are_checked_against_the_option_values() -> None:
    region = from_wire(MCPServerInput, REGION)
    assert to_wire(region)["options"] == REGION["options"]
    assert region.choices == [("Europe", "eu_"), ("United States", "us_"), ("local_", "local_")]
    assert InputResolver([region], values={"region": "us_"}).render("${input:region}echo") == "us_echo"
    assert InputResolver([region], values={"region": "local_"}).value("region") == "local_"
    with pytest.raises(InputError, match=r"must be one of \['eu_', 'us_', 'local_'\], got 'Europe'"):
        InputResolver([region], values={"region": "Europe"}).value("region")  # a label is not a value


def test_an_option_object_needs_both_label_and_value() -> None:
    with pytest.raises(Exception, match=r"required field missing @ \$\.options\[0\]\.value"):
        from_wire(MCPServerInput, {**REGION, "options": [{"label": "Europe"}]})


@pytest.fixture
def server(no_leaks: None) -> Iterator[SMCPServer]:
    with SMCPServer() as server:
        server.start()
        yield server


def test_the_cli_prompt_shows_the_labels_and_passes_the_picked_value(server: SMCPServer, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = [stdio_config("tools", "--prefix", "${input:region}")]
    config.write_text(json.dumps({"servers": servers, "inputs": [REGION]}))
    terminal, child_side = pty.openpty()
    argv = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "computer",
            "--config", str(config), "--url", server.url, "--office", "o", "--name", "c", "--json"]  # fmt: skip
    environ = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}  # where the CLI remembers the answer
    proc = subprocess.Popen(argv, stdin=child_side, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
    os.close(child_side)
    try:
        os.write(terminal, b"2\n")  # waits in the terminal until the prompt reads it
        assert proc.stdout is not None
        shown = [proc.stdout.readline() for _ in range(3)]
        assert shown == ["  1. Europe\n", "  2. United States\n", "  3. local_\n"]
        ready = json.loads(proc.stdout.readline().split("]: ", 1)[-1])  # after the prompt's own text
        assert "tools__us_echo" in ready["tools"]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
        os.close(terminal)
