"""The relay against the official a2c-smcp 0.4.2 Server: to it the relay is an ordinary
Agent. Worker processes and an in-process relay Agent share one seat; our Computer hosts
the test tool server."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from interop.harness import start_official_server
from interop.venv import CURRENT, official_sdk_python
from mcp_servers import TOOL_SERVER
from smcp_sync import Agent, Computer
from smcp_sync.connection.client_auth import key_auth
from smcp_sync.computer import allow_all
from smcp_sync.relay.place import RelayPlace

from .conftest import OFFICE, Worker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]


def test_workers_share_one_seat_on_the_official_server(place: RelayPlace, no_leaks: None, spawn: Any) -> None:
    server = spawn(start_official_server(official_sdk_python(CURRENT)))
    tools = {"name": "tools", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER]},
             "default_tool_meta": {"auto_apply": True}}  # fmt: skip
    auth = key_auth("test-key")
    with Computer("c1", [tools], confirm=allow_all) as computer:
        computer.connect(server.url, OFFICE, auth, timeout=30)
        with Agent.via_relay("agent", url=server.url, office_id=OFFICE, auth=auth, relay_dir=place.folder) as agent:
            assert agent.call_tool("c1", "tools__echo", {"text": "ours"}, timeout=30).content[0].text == "ours"
            workers = [Worker(place, server.url, "--threads", "2", "--calls", "10") for _ in range(2)]
            answers = [line for worker in workers for line in worker.finish()]
            assert len(answers) == 40 and all(line.get("answer") == line["sent"] for line in answers), answers[:3]
            future = agent.submit_tool_call("c1", "tools__sleep", {"seconds": 30}, timeout=60)
            agent.cancel_tool_call(future.req_id)
            assert future.result(60).is_error
            assert [s.name for s in agent.list_room(timeout=20) if s.role == "agent"] == ["agent"]
