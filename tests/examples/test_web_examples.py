"""The Flask and Django examples, each in a child process under a real WSGI server that
upgrades to websocket: Flask under gunicorn (gthread, with the example's
gunicorn.conf.py), Django under werkzeug (the example's serve.py).

A Computer (in this process, hosting the test tool server) joins the app's office;
requests go over HTTP to the app's view, whose Agent calls the Computer over Socket.IO;
another Agent talks to the same app over Socket.IO. Stopping the app with SIGINT or
SIGTERM must end it promptly even with websockets open.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import attrs
import pytest

from smcp_sync import Agent, AuthError, Computer, OfficeError
from smcp_sync.computer import allow_all

try:
    from tests.mcp_servers import TOOL_SERVER
except ImportError:  # tests/ itself is on sys.path
    from mcp_servers import TOOL_SERVER

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEY = "web-example-key"
OFFICE = "web-office"
STARTUP_TIMEOUT = 30.0
#: gunicorn's graceful stop alone would take its 30 s graceful_timeout with websockets open.
PROMPT_STOP = 10.0
TOOL_SERVER_CONFIG = {
    "name": "tools",
    "type": "stdio",
    "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER]},
}


@attrs.frozen
class WebExample:
    directory: str
    command: tuple[str, ...]
    ready: str  # a regex whose group 1 is the app's URL, in the app's output
    package: str  # the web framework the example needs


FLASK = WebExample(
    "flask_app",
    (sys.executable, "-m", "gunicorn", "--bind", "127.0.0.1:0"),  # settings: its gunicorn.conf.py
    r"Listening at: (http://127\.0\.0\.1:\d+)",
    "flask",
)
DJANGO = WebExample("django_project", (sys.executable, "serve.py", "--port", "0"), r"serving on (http://\S+)", "django")

EXAMPLE_PARAMS = [
    pytest.param(
        example,
        id=example.package,
        marks=pytest.mark.skipif(
            importlib.util.find_spec(example.package) is None, reason=f"the example needs {example.package}"
        ),
    )
    for example in (FLASK, DJANGO)
]


class AppProcess:
    """The example app as a child process; its output is drained by a thread (and kept
    for failure messages) until the process and its children close it."""

    def __init__(self, example: WebExample) -> None:
        env = {**os.environ, "SMCP_API_KEY": KEY, "SMCP_OFFICE": OFFICE, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            example.command,
            cwd=EXAMPLES / example.directory,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        self._ready = re.compile(example.ready)
        self._url: str | None = None
        self._listening = threading.Event()
        self._reader = threading.Thread(target=self._read, name="web-example-output", daemon=True)
        self._reader.start()
        if not self._listening.wait(STARTUP_TIMEOUT):
            self.kill()
            pytest.fail(f"{example.directory} did not start listening:\n{''.join(self.output)}")
        assert self._url is not None, "".join(self.output)
        self.url: str = self._url

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line)
            match = self._ready.search(line)
            if match and self._url is None:
                self._url = match.group(1)
                self._listening.set()
        self._listening.set()  # ended without listening: don't make the test wait

    def stop(self, sig: int) -> tuple[int, float]:
        """Send `sig`; the exit code and how long the exit took."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(2 * PROMPT_STOP)
        elapsed = time.monotonic() - started
        self._reader.join(PROMPT_STOP)
        return code, elapsed

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(PROMPT_STOP)
        self._reader.join(PROMPT_STOP)
        self.proc.stdout.close()


@pytest.fixture
def start_app():
    started: list[AppProcess] = []

    def start(example: WebExample) -> AppProcess:
        started.append(AppProcess(example))
        return started[-1]

    yield start
    for app in started:
        app.kill()


@pytest.fixture
def closing():
    """`closing(obj)` -> obj, closed after the test (Computers and Agents)."""
    objects: list[Any] = []

    def register(obj: Any) -> Any:
        objects.append(obj)
        return obj

    yield register
    for obj in reversed(objects):
        obj.close()


def post(url: str, body: bytes = b"") -> tuple[int, Any]:
    """POST `body` as JSON; the HTTP status and the decoded JSON answer."""
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def call_view(app: AppProcess, computer: str, tool: str, arguments: Any) -> tuple[int, Any]:
    return post(f"{app.url}/computers/{computer}/tools/{tool}", json.dumps(arguments).encode())


def echoed(text: str) -> dict[str, Any]:
    """The view's answer for the test tool server's echo(text)."""
    return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": {"result": text}}


@pytest.mark.parametrize("example", EXAMPLE_PARAMS)
def test_view_calls_a_tool_and_the_same_app_serves_agents(example, start_app, closing):
    app = start_app(example)
    with pytest.raises(AuthError):  # the example's SMCP_API_KEY is enforced
        closing(Agent("no-key")).connect(app.url, timeout=10)
    laptop = closing(Computer("laptop", [TOOL_SERVER_CONFIG], confirm=allow_all))
    laptop.connect(app.url, OFFICE, auth={"api_key": KEY})

    # An Agent of another process, over Socket.IO to the app's URL.
    ops = closing(Agent("ops", auth={"api_key": KEY}))
    ops.connect(app.url, timeout=10)
    ops.join_office(OFFICE)
    assert ops.call_tool("laptop", "add", {"a": 2, "b": 3}, timeout=10).text == "5"
    assert sorted(session.name for session in ops.list_room()) == ["laptop", "ops"]
    ops.leave_office()

    # The view: the first concurrent requests share one lazily made Agent (a second
    # Agent would be refused the office: 4101, and the request would fail).
    texts = [f"request {n}" for n in range(8)]
    with concurrent.futures.ThreadPoolExecutor(len(texts)) as pool:
        answers = list(pool.map(lambda text: call_view(app, "laptop", "echo", {"text": text}), texts))
    assert answers == [(200, echoed(text)) for text in texts]

    status, failed = call_view(app, "laptop", "fail", {"message": "disk full"})
    assert (status, failed["isError"], failed["content"]) == (200, True, [{"type": "text", "text": "disk full"}])
    status, missing = call_view(app, "desktop", "echo", {"text": "x"})
    assert (status, missing["code"]) == (404, 404)
    assert "desktop" in missing["message"]
    assert call_view(app, "laptop", "echo", ["not", "an", "object"]) == (
        400,
        {"code": 400, "message": "the request body must be a JSON object of tool arguments"},
    )

    # The view's Agent sits in the office: the app's Socket.IO side and its view share one Server.
    with pytest.raises(OfficeError) as refused:
        ops.join_office(OFFICE)
    assert refused.value.code == 4101

    code, elapsed = app.stop(signal.SIGTERM)  # with the Computer, ops and the view's Agent connected
    assert code == 0, "".join(app.output)
    assert elapsed < PROMPT_STOP


@pytest.mark.parametrize("example", EXAMPLE_PARAMS)
def test_ctrl_c_stops_the_app_promptly_with_its_agent_connected(example, start_app):
    app = start_app(example)
    status, answer = call_view(app, "laptop", "echo", {"text": "x"})  # makes the view's Agent; no Computer
    assert (status, answer["code"]) == (404, 404)

    code, elapsed = app.stop(signal.SIGINT)
    assert code == 0, "".join(app.output)
    assert elapsed < PROMPT_STOP
