"""The Celery app the host tests run with a prefork worker: one relay Agent at module
level, as a task module would (``SMCP_URL``, ``SMCP_OFFICE``, ``SMCP_RELAY_DIR`` and
``SMCP_BROKER`` from the environment)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

from smcp_sync import Agent

app = Celery("relay_hosts", broker=os.environ["SMCP_BROKER"], backend=os.environ["SMCP_BROKER"])
agent = Agent.via_relay("agent", url=os.environ["SMCP_URL"], office_id=os.environ["SMCP_OFFICE"])


@app.task
def echo(text: str) -> dict[str, Any]:
    result = agent.call_tool("c1", "tools__echo", {"text": text}, timeout=20)
    return {"echo": result.content[0].text, "pid": os.getpid()}


@app.task
def agents() -> list[str]:
    return [s.name for s in agent.list_room(timeout=20) if s.role == "agent"]
