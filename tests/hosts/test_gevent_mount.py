"""`SMCPServer.mount()` in a WSGI app served by gunicorn's gevent worker (no preload: the
app, smcp_sync with it, is imported after gevent patched the standard library): the app's
own pages and the Server both answer, and an Agent calls a Computer's tool through it
(issue 36: it failed with AttributeError: 'BacklogQueue' object has no attribute
'not_empty'). Real parts: gunicorn as a child process; the Computer (hosting the test tool
server) and the Agent in this process."""

from __future__ import annotations

import sys
import textwrap
import urllib.request

import pytest

from mcp_servers import tool_server_config
from office_parts import connected_computer, joined_agent

from .host_process import HostProcess

pytest.importorskip("gunicorn", reason="the test runs gunicorn (the test extra has it)")
pytest.importorskip("gevent", reason="the test runs gunicorn's gevent worker (the test extra has it)")
pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_leaks")]

OFFICE = "office-gevent-mount"
TOOLS = tool_server_config()
APP = """
from smcp_sync import SMCPServer


def pages(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"the app's own page"]


server = SMCPServer()
application = server.mount(pages)
"""


def test_a_mounted_server_under_the_gevent_worker_routes_tool_calls(tmp_path):
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    command = [sys.executable, "-m", "gunicorn", "-k", "gevent", "-w", "1", "--bind", "127.0.0.1:0",
               "--graceful-timeout", "5", "app:application"]  # fmt: skip
    host = HostProcess(command, tmp_path, r"Listening at: (http://127\.0\.0\.1:\d+)", {})
    try:
        assert host.url is not None
        with urllib.request.urlopen(f"{host.url}/page", timeout=10) as response:
            assert response.read() == b"the app's own page"
        with connected_computer("c1", [TOOLS], host.url, OFFICE, timeout=20), \
                joined_agent("a1", host.url, OFFICE, timeout=10) as agent:  # fmt: skip
            answers = [agent.call_tool("c1", "echo", {"text": f"call {n}"}, timeout=10).text for n in range(5)]
            assert answers == [f"call {n}" for n in range(5)]
            assert sorted(session.name for session in agent.list_room(timeout=10)) == ["a1", "c1"]
    finally:
        code = host.stop()
    assert code == 0, host.text
    assert "Traceback" not in host.text, host.text
