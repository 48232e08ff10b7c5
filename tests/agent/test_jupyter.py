"""The Agent from a real Jupyter kernel: a notebook cell calls a tool without `await`,
and a kernel interrupt during a call cancels it on the MCP server.

Why: a notebook's main thread already runs an asyncio loop; a client that used
`asyncio.run` or `run_until_complete` on the caller's thread would fail there. And the
interrupt button is how a notebook user stops a call: the tool must stop too (issue 36).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_servers import TOOL_SERVER
from office_parts import connected_computer, serving

from smcp_sync.server import SMCPServer

try:
    from tests.agent.scripted_computer import ScriptedComputer
except ImportError:  # tests/ itself is on sys.path
    from agent.scripted_computer import ScriptedComputer

nbformat = pytest.importorskip("nbformat", reason="the Jupyter test needs nbformat, nbclient and ipykernel")
nbclient = pytest.importorskip("nbclient", reason="the Jupyter test needs nbformat, nbclient and ipykernel")
pytest.importorskip("ipykernel", reason="the Jupyter test needs nbformat, nbclient and ipykernel")

CELL = """
import asyncio, json
from smcp_sync.agent import Agent

loop_running = asyncio.get_running_loop().is_running()   # the kernel's own loop
agent = Agent("notebook-agent")
agent.connect({url!r}, timeout=10)
agent.join_office("office-nb", timeout=10)
result = agent.call_tool("c1", "echo", {{"from": "a notebook cell"}}, timeout=10)
tools = [tool.name for tool in agent.get_tools("c1", timeout=10)]
agent.close()
print(json.dumps({{"loop_running": loop_running, "result": result.structured_content, "tools": tools}}))
"""


@pytest.mark.timeout(120)
def test_a_notebook_cell_calls_a_tool_without_await(no_leaks):
    server = SMCPServer()
    url = server.start()
    computer = ScriptedComputer("c1").start(url, "office-nb")
    try:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL.format(url=url))])
        nbclient.NotebookClient(notebook, timeout=90, kernel_name="python3").execute()
    finally:
        computer.close()
        server.stop()

    [output] = [o for o in notebook.cells[0].outputs if o.output_type == "stream" and o.name == "stdout"]
    assert json.loads(output.text) == {
        "loop_running": True,
        "result": {"from": "a notebook cell"},
        "tools": ["echo", "fail", "hang"],
    }


INTERRUPTED_CELL = """
import json
from smcp_sync.agent import Agent

agent = Agent("notebook-agent")
agent.connect({url!r}, timeout=10)
agent.join_office("office-nb", timeout=10)
try:
    agent.call_tool("c1", "sleep", {{"seconds": 3600}}, timeout=3600)
except KeyboardInterrupt as interrupt:
    notes = interrupt.__notes__
agent.close()
print(json.dumps(notes))
"""


def lines_of(path: Path, timeout: float = 60.0) -> list[str]:
    """The lines the MCP server (another process) logged to `path`, once there are some."""
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # a file written by another process: nothing to wait on but the file
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.timeout(120)
def test_a_kernel_interrupt_during_a_call_cancels_it_on_the_mcp_server(no_leaks, tmp_path):
    logs = {"SMCP_TEST_STARTED_LOG": tmp_path / "started.log", "SMCP_TEST_CANCEL_LOG": tmp_path / "cancelled.log"}
    tools = {
        "name": "tools",
        "type": "stdio",
        "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER], "env": {k: str(v) for k, v in logs.items()}},
        "default_tool_meta": {"auto_apply": True},
    }
    with serving() as server, connected_computer("c1", [tools], server.url, "office-nb", timeout=20):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(INTERRUPTED_CELL.format(url=server.url))])
        client = nbclient.NotebookClient(notebook, timeout=90, kernel_name="python3")

        def interrupt_once_started() -> None:
            if lines_of(logs["SMCP_TEST_STARTED_LOG"]):
                interrupted = client.km.interrupt_kernel()  # the notebook's interrupt button
                if inspect.isawaitable(interrupted):  # an AsyncKernelManager's
                    asyncio.run(interrupted)

        interrupter = threading.Thread(target=interrupt_once_started, name="kernel-interrupter")
        interrupter.start()
        try:
            client.execute()
        finally:
            interrupter.join(70)
        cancelled = lines_of(logs["SMCP_TEST_CANCEL_LOG"])

    [output] = [o for o in notebook.cells[0].outputs if o.output_type == "stream" and o.name == "stdout"]
    [note] = json.loads(output.text)
    assert note.startswith("smcp_sync: tool call 'sleep' on computer 'c1' (req_id ") and note.endswith("cancel sent")
    assert [line.split()[0] for line in cancelled] == ["cancelled"]
