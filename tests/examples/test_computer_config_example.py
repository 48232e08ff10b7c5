"""examples/computer_config: run_computer.py loads mcp_servers.json (official SDK format,
with a promptString default, a pickString and a password input), resolves the inputs
without prompting, and serves the example MCP servers to an office until Ctrl-C.

The script runs as a child process against a Server in this process; an Agent in the
office checks what it serves, and psutil checks what reached the MCP server processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import attrs
import psutil
import pytest

from smcp_sync import Agent, EnterOfficeNotification, SMCPServer, events, to_wire
from smcp_sync.computer import REDACTED

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "computer_config" / "run_computer.py"
KEY = "config-example-key"
OFFICE = "config-office"
TOKEN = "s3cret-docs-token"
WAIT = 30.0


def run_script(*args: str, env: dict[str, str] | None = None, **popen: object) -> subprocess.Popen:
    """The script as the README runs it: from the repository root, in the virtualenv
    (its `python` first on PATH)."""
    inherited = {name: value for name, value in os.environ.items() if not name.startswith("SMCP_INPUT_")}
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO,
        env={**inherited, "PATH": path, **(env or {})},
        text=True,
        **popen,
    )


def stop(script: subprocess.Popen) -> None:
    """After a failure: SIGTERM lets the script stop its MCP servers; kill if it hangs."""
    if script.poll() is None:
        script.terminate()
        try:
            script.wait(WAIT)
        except subprocess.TimeoutExpired:
            script.kill()
            script.wait(WAIT)


def mcp_server_processes(script: subprocess.Popen) -> dict[str, psutil.Process]:
    """The script's MCP server children, by module name (tools_server, ...): each runs
    as `python -m smcp_sync.demo.servers.<name>`."""
    children = psutil.Process(script.pid).children()
    return {child.cmdline()[2].rpartition(".")[2]: child for child in children}


@attrs.define
class Office:
    """A Server in this process and an Agent in its office that notes when the
    script's Computer enters and leaves."""

    url: str
    agent: Agent
    entered: threading.Event = attrs.Factory(threading.Event)
    left: threading.Event = attrs.Factory(threading.Event)

    def on_computer(self, notification: Any) -> None:
        if notification.computer == "laptop":
            (self.entered if isinstance(notification, EnterOfficeNotification) else self.left).set()


@pytest.fixture
def office() -> Iterator[Office]:
    server = SMCPServer(auth=KEY)
    office = Office(server.start(), Agent("checker", auth={"api_key": KEY}))
    office.agent.on(events.ENTER_OFFICE_NOTIFICATION, office.on_computer)
    office.agent.on(events.LEAVE_OFFICE_NOTIFICATION, office.on_computer)
    try:
        office.agent.connect(office.url, timeout=10)
        office.agent.join_office(OFFICE)
        yield office
    finally:
        office.agent.close()
        server.stop()


def test_serves_the_configured_servers_with_resolved_inputs_until_ctrl_c(office, tmp_path):
    agent = office.agent
    output = tmp_path / "output.txt"
    with output.open("w") as out:
        script = run_script(
            "--url", office.url, "--office", OFFICE, "--input", "fullscreen_window=browser", "--api-key", KEY,
            env={"SMCP_INPUT_DOCS_TOKEN": TOKEN},  # documents_root: its default
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        assert office.entered.wait(WAIT), output.read_text()

        tools = ["tools__calculate", "tools__text_stats", "tools__current_time", "tools__list_documents", "tools__read_document"]
        assert [tool.name for tool in agent.get_tools("laptop")] == tools
        average = agent.call_tool("laptop", "calculate", {"expression": "(1260 + 1305 + 1615) / 3"})
        assert average.text == "1393.33333333"
        assert "2026-Q1-经营报告.md" in agent.call_tool("laptop", "list_documents").text

        # What each input became, where the MCP servers see it.
        servers = mcp_server_processes(script)
        assert sorted(servers) == ["documents_server", "tools_server", "window_server"]
        assert servers["tools_server"].cmdline()[3:] == ["--root", "smcp_sync/demo/documents"]  # promptString default
        assert servers["window_server"].cmdline()[3:] == ["--metadata", "annotations", "--fullscreen", "browser"]  # pickString, --input
        assert servers["documents_server"].environ()["DOCS_ACCESS_TOKEN"] == TOKEN  # password, environment

        # ... and what agents see of it: placeholders, never the secret.
        config = agent.get_config("laptop")
        assert [item.id for item in config.inputs] == ["documents_root", "fullscreen_window", "docs_token"]
        assert config.servers["documents"].server_parameters.env == {"DOCS_ACCESS_TOKEN": REDACTED}
        assert config.servers["desktop"].server_parameters.args[-1] == "${input:fullscreen_window}"
        assert TOKEN not in json.dumps(to_wire(config))

        script.send_signal(signal.SIGINT)
        assert script.wait(WAIT) == 0, output.read_text()
    finally:
        stop(script)
    gone, alive = psutil.wait_procs(list(servers.values()), timeout=WAIT)
    assert alive == []
    assert office.left.wait(WAIT)
    assert output.read_text().splitlines() == [
        f"computer 'laptop' joined office {OFFICE!r}; tools: {', '.join(tools)}",
        "stopped",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "input 'docs_token' (Access token of the document store) has no value"),
        (
            ("--input", "docs_token=x", "--input", "fullscreen_window=sideways"),
            "input 'fullscreen_window' must be one of ['monitor', 'browser', 'editor', 'terminal', 'none'], "
            "got 'sideways'",
        ),
    ],
    ids=["password without a value", "value not among the options"],
)
def test_an_input_without_a_usable_value_stops_it_before_anything_starts(arguments, message):
    script = run_script(
        "--url", "http://127.0.0.1:9", "--office", OFFICE, *arguments,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = script.communicate(timeout=WAIT)
    assert script.returncode == 2
    assert stdout == ""
    assert stderr.startswith(message)
    assert "set it with --input" in stderr
