"""The WSGI app the host tests run under gunicorn and uWSGI: one relay Agent made at
import, as an application would (``SMCP_URL``, ``SMCP_OFFICE`` and ``SMCP_RELAY_DIR`` from
the environment). ``/echo?text=T`` answers the tool's echo of T and the worker's pid;
``/sleep?seconds=S`` calls the sleep tool; ``/agents`` the Agents in the office."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs

from smcp_sync import Agent

agent = Agent.via_relay("agent", url=os.environ["SMCP_URL"], office_id=os.environ["SMCP_OFFICE"])


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
    if environ["PATH_INFO"] == "/agents":
        body: Any = [s.name for s in agent.list_room(timeout=20) if s.role == "agent"]
    elif environ["PATH_INFO"] == "/sleep":
        result = agent.call_tool("c1", "tools__sleep", {"seconds": float(query["seconds"])}, timeout=120)
        body = {"is_error": result.is_error, "pid": os.getpid()}
    else:
        result = agent.call_tool("c1", "tools__echo", {"text": query.get("text", "")}, timeout=20)
        body = {"echo": result.content[0].text, "pid": os.getpid()}
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]
