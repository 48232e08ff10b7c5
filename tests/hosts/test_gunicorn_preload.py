"""gunicorn's sync workers forked from a master that connected an Agent at import
(`--preload -w 2`): every request gets the clear fork error at once, not a 408 after the
call's whole timeout (issue 36). Real parts: a Server and a Computer hosting the test
tool server in this process, gunicorn as a child process with a tiny WSGI app."""

from __future__ import annotations

import sys
import textwrap
import urllib.error
import urllib.request

import pytest

from mcp_servers import tool_server_config
from office_parts import connected_computer, serving

from .host_process import HostProcess

pytest.importorskip("gunicorn", reason="the test runs gunicorn (the test extra has it)")
pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_leaks")]

OFFICE = "office-gunicorn"
APP = """
import os

from smcp_sync import Agent, SMCPError

agent = Agent("web")  # connected at import, in gunicorn's master (--preload)
agent.connect(os.environ["SMCP_URL"], timeout=10)
agent.join_office(os.environ["SMCP_OFFICE"], timeout=10)


def application(environ, start_response):
    try:
        text, status = agent.call_tool("c1", "echo", {"text": "hi"}, timeout=30).text, "200 OK"
    except SMCPError as exc:
        text, status = f"{type(exc).__name__}: {exc}", "503 Service Unavailable"
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [text.encode()]
"""
TOOLS = tool_server_config()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


def test_preloaded_sync_workers_get_the_fork_error_at_once(tmp_path):
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    with serving() as server, connected_computer("c1", [TOOLS], server.url, OFFICE, timeout=20) as computer:
        command = [sys.executable, "-m", "gunicorn", "--preload", "-w", "2", "-k", "sync",
                   "--bind", "127.0.0.1:0", "--timeout", "60", "app:application"]  # fmt: skip
        host = HostProcess(command, tmp_path, r"Listening at: (http://127\.0\.0\.1:\d+)",
                           {"SMCP_URL": server.url, "SMCP_OFFICE": OFFICE}, workers=2)  # fmt: skip
        try:
            answers = [get(f"{host.url}/call/{n}") for n in range(6)]
        finally:
            code = host.stop()
        for status, text in answers:
            assert status == 503, host.text
            assert text.startswith("ForkedConnectionError: cannot send client:tool_call: agent 'web' was connected")
            assert "post_fork" in text
        assert code == 0, host.text
        assert computer.tool_call_history() == ()  # no call from a worker reached it
