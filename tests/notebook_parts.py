"""A notebook cell run in a real Jupyter kernel (nbclient) and interrupted mid-call, as
the notebook's interrupt button does: shared by the direct Agent's and the relay's
Jupyter tests (the callers skip without nbformat, nbclient and ipykernel)."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from pathlib import Path
from typing import Any

from mcp_servers import logged_lines


def run_interrupted(cell: str, started_log: Path, started: int = 0) -> Any:
    """Run `cell`, interrupt the kernel once the MCP server has logged more than `started`
    started calls, and return what the cell printed on stdout, read as JSON."""
    import nbclient
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    client = nbclient.NotebookClient(notebook, timeout=90, kernel_name="python3")

    def interrupt_once_started() -> None:
        if len(logged_lines(started_log, started + 1, timeout=60)) > started:
            interrupted = client.km.interrupt_kernel()  # the notebook's interrupt button
            if inspect.isawaitable(interrupted):  # an AsyncKernelManager's
                asyncio.run(interrupted)

    interrupter = threading.Thread(target=interrupt_once_started, name="kernel-interrupter")
    interrupter.start()
    try:
        client.execute()
    finally:
        interrupter.join(70)
    [output] = [o for o in notebook.cells[0].outputs if o.output_type == "stream" and o.name == "stdout"]
    return json.loads(output.text)
