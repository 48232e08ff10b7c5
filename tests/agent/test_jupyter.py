"""The Agent from a real Jupyter kernel: a notebook cell calls a tool without `await`.

Why: a notebook's main thread already runs an asyncio loop; a client that used
`asyncio.run` or `run_until_complete` on the caller's thread would fail there.
"""

from __future__ import annotations

import json

import pytest

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
