"""The Agent from a real Jupyter kernel: a notebook cell calls a tool without `await`,
and a kernel interrupt during a call cancels it on the MCP server.

Why: a notebook's main thread already runs an asyncio loop; a client that used
`asyncio.run` or `run_until_complete` on the caller's thread would fail there. And the
interrupt button is how a notebook user stops a call: the tool must stop too (issue 36).
"""

from __future__ import annotations

import json

import pytest
from mcp_servers import logged_lines, tool_server_config
from notebook_parts import run_interrupted
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


@pytest.mark.timeout(120)
def test_a_kernel_interrupt_during_a_call_cancels_it_on_the_mcp_server(no_leaks, tmp_path):
    logs = {"SMCP_TEST_STARTED_LOG": tmp_path / "started.log", "SMCP_TEST_CANCEL_LOG": tmp_path / "cancelled.log"}
    with serving() as server, connected_computer("c1", [tool_server_config(logs)], server.url, "office-nb", timeout=20):
        [note] = run_interrupted(INTERRUPTED_CELL.format(url=server.url), logs["SMCP_TEST_STARTED_LOG"])
        cancelled = logged_lines(logs["SMCP_TEST_CANCEL_LOG"])

    assert note.startswith("smcp_sync: tool call 'sleep' on computer 'c1' (req_id ") and note.endswith("cancel sent")
    assert [line.split()[0] for line in cancelled] == ["cancelled"]
