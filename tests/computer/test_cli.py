"""`smcp-sync computer` as a user runs it: a real process, a real Server, an agent."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import IO, Iterator

import pytest
from smcp_sync.connection.session import Connection

from smcp_sync.protocol import CallToolResult, events, from_wire
from smcp_sync.server import SMCPServer

from .helpers import stdio_config

pytestmark = pytest.mark.timeout(60)

CLI = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]


@pytest.fixture
def server(no_leaks: None) -> Iterator[SMCPServer]:
    with SMCPServer(auth="cli-key") as server:
        server.start()
        yield server


def run_cli(*args: str) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    proc = subprocess.Popen(
        [*CLI, "computer", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    return proc, lines


def _pump(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
    assert stream is not None
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.mark.parametrize("stop_signal, exit_code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_serves_the_configured_tools_until_stopped(
    server: SMCPServer, tmp_path: Path, stop_signal: signal.Signals, exit_code: int
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({
        "servers": [stdio_config("tools", "--prefix", "${input:prefix}")],
        "inputs": [{"type": "promptString", "id": "prefix", "description": "Tool name prefix"}],
    }))
    proc, lines = run_cli(
        "--config", str(config), "--url", server.url, "--office", "o1", "--name", "cli-computer",
        "--input", "prefix=cli_", "--api-key", "cli-key", "--allow-all-tools",
    )
    try:
        summary = lines.get(timeout=30)
        assert summary == f"computer 'cli-computer' joined office 'o1' at {server.url} with 11 tools from 1 MCP servers\n"
        agent = Connection("agent", "a1", auth={"api_key": "cli-key"})
        try:
            agent.connect(server.url, timeout=5)
            agent.join_office("o1", timeout=5)
            payload = {"agent": "a1", "req_id": uuid.uuid4().hex, "computer": "cli-computer",
                       "tool_name": "cli_echo", "params": {"text": "via the CLI"}, "timeout": 10}
            result = from_wire(CallToolResult, agent.call(events.TOOL_CALL, payload, 20))
            assert result.text == "via the CLI"
        finally:
            agent.close()
        proc.send_signal(stop_signal)
        assert proc.wait(20) == exit_code  # and its MCP server child is gone (no_leaks)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--config", "{missing}"], 2, "cannot read configuration file"),
        (["--config", "{config}", "--input", "novalue"], 2, "--input expects ID=VALUE"),
        (["--config", "{config}", "--url", "http://127.0.0.1:9"], 1, "cannot connect to http://127.0.0.1:9"),
        (["--config", "{config}", "--api-key", "wrong"], 1, "[401] authentication failed"),
    ],
)
def test_failures_exit_with_a_code_and_a_reason(
    server: SMCPServer, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([]))
    filled = [a.format(missing=tmp_path / "nope.json", config=config) for a in args]
    base = {"--url": server.url, "--office": "o1", "--name": "c", "--api-key": "cli-key"}
    for flag, value in base.items():
        if flag not in filled:
            filled += [flag, value]
    done = subprocess.run([*CLI, "computer", *filled], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == code, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_an_mcp_server_that_does_not_start_is_an_error_unless_allowed(server: SMCPServer, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    broken = {"name": "broken", "type": "stdio", "server_parameters": {"command": "/nonexistent/mcp-server"}}
    config.write_text(json.dumps([broken, stdio_config("tools")]))
    common = ["--config", str(config), "--url", server.url, "--office", "o1", "--name", "c", "--api-key", "cli-key"]
    done = subprocess.run([*CLI, "computer", *common], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    *warnings, error = done.stderr.splitlines()
    assert error == "smcp-sync computer: 1 MCP server(s) did not start: 'broken': FileNotFoundError: No such file or directory"
    assert "WARNING smcp_sync.computer.mcp.server_connection: MCP server 'broken' failed to start (command '/nonexistent/mcp-server')" in warnings[0]
    proc, lines = run_cli(*common, "--allow-failed-servers")
    try:
        assert lines.get(timeout=30).endswith("from 2 MCP servers; not running yet: broken\n")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
