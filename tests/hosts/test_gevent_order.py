"""smcp_sync (its Agent, and python-socketio with it) imported before
`gevent.monkey.patch_all()` works; an Agent made before it refuses to connect with one
clear error instead of blocking gevent's hub on a lock of the operating system (issue
36). Each case is a child Python process against a real Server and Computer in this
process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mcp_servers import tool_server_config
from office_parts import connected_computer, serving

pytest.importorskip("gevent", reason="the test patches with gevent (the test extra has it)")
pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

OFFICE = "office-gevent"
TOOLS = tool_server_config()
IMPORTED_FIRST = """
import json, sys
from smcp_sync import Agent            # imported before patching (python-socketio with it): fine
from gevent import monkey
monkey.patch_all()
import gevent

agent = Agent("g")                     # made after patching
agent.connect(sys.argv[1], timeout=10)
agent.join_office(sys.argv[2], timeout=10)
calls = [gevent.spawn(agent.call_tool, "c1", "echo", {"text": str(n)}, timeout=10) for n in range(4)]
gevent.joinall(calls, timeout=20)
agent.close()
print(json.dumps([call.value.text for call in calls]))
"""
MADE_FIRST = """
import json, sys
import smcp_sync
from smcp_sync.threads.gevent_order import MadeBeforePatchingError
agent = smcp_sync.Agent("g")           # made before patching: its locks are the OS's
from gevent import monkey
monkey.patch_all()
try:
    agent.connect(sys.argv[1], timeout=10)
except MadeBeforePatchingError as exc:
    print(json.dumps([type(exc).__name__, str(exc)]))
"""


def run(script: str, *args: str) -> object:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_imported_before_patching_an_agent_made_after_calls_tools_from_greenlets():
    with serving() as server, connected_computer("c1", [TOOLS], server.url, OFFICE, timeout=20):
        assert run(IMPORTED_FIRST, server.url, OFFICE) == ["0", "1", "2", "3"]


def test_an_agent_made_before_patching_refuses_to_connect_naming_the_order():
    with serving() as server:
        name, message = run(MADE_FIRST, server.url)
    assert name == "MadeBeforePatchingError"
    assert message.startswith("the agent 'g' was made before gevent.monkey.patch_all()") and "patch_all() first" in message
