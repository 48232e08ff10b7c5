"""`smcp-sync server`: the production server (gunicorn: gthread, or gevent with --mode
gevent) in a child process."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
import threading
import time

import pytest
import socketio

from smcp_sync import Agent, Computer
from smcp_sync.cli import main
from smcp_sync.connection.session import ReconnectPolicy
from smcp_sync.protocol.errors import ErrorCode
from smcp_sync.protocol.events import NAMESPACE
from smcp_sync.server.limits.limits import SERVE_MODES

from .peers import Peer

pytestmark = pytest.mark.timeout(60)

KEY = "cli-key"


class ServerProcess:
    def __init__(self, *args: str) -> None:
        command = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "server", *args]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self._read_url(timeout=30)

    def _read_url(self, timeout: float) -> str:
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.kill()
                pytest.fail("the server printed no URL in time")
        line = self.proc.stdout.readline()
        assert line.startswith("smcp-sync server listening on http://127.0.0.1:"), line + self.proc.stderr.read()
        return line.split()[-1]

    def stop(self, sig: int, timeout: float = 15) -> tuple[int, float]:
        started = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        elapsed = time.monotonic() - started
        self.stderr = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, elapsed

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def server_process(no_leaks):
    started: list[ServerProcess] = []

    def start(*args: str) -> ServerProcess:
        started.append(ServerProcess(*args))
        return started[-1]

    yield start
    for process in started:
        process.kill()


@pytest.mark.parametrize("mode", SERVE_MODES)
@pytest.mark.parametrize("sig, exit_code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_serves_with_auth_and_stops_cleanly_on_signals(server_process, mode, sig, exit_code):
    server = server_process("--port", "0", "--api-key", KEY, "--mode", mode)
    with pytest.raises(socketio.exceptions.ConnectionError):
        Peer(server.url, auth={"api_key": "wrong"})
    computer = Peer(server.url, auth={"access_token": KEY}, transports=("polling", "websocket"))
    agent = Peer(server.url, auth={"api_key": KEY})
    try:
        assert computer.join("computer", "c1", "o1") == (True, None)
        assert agent.join("agent", "a1", "o1") == (True, None)
        computer.answer("client:get_tools", lambda data: {"tools": [], "req_id": data["req_id"]})
        assert agent.call("client:get_tools", {"agent": "a1", "req_id": "r", "computer": "c1"}) == {
            "tools": [],
            "req_id": "r",
        }
        computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": data["params"]["x"]}]})
        call = {"agent": "a1", "req_id": "t", "computer": "c1", "tool_name": "echo", "params": {"x": "hi"}, "timeout": 5}
        assert agent.call("client:tool_call", call) == {"content": [{"type": "text", "text": "hi"}]}
        dropped = threading.Event()
        agent.client.on("disconnect", lambda reason=None: dropped.set(), namespace=NAMESPACE)
        code, elapsed = server.stop(sig)
        assert code == exit_code  # Ctrl-C: 130, as every command interrupted
        assert elapsed < 8, f"shutdown took {elapsed:.1f}s"
        assert dropped.wait(5)
        assert "[INFO]" not in server.stderr and "Booting worker" not in server.stderr  # gunicorn's INFO lines
    finally:
        computer.close()
        agent.close()


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_an_agent_calls_a_computers_tool_in_each_mode(server_process, mode):
    """Our Agent and Computer, end to end: the call reaches the Computer (which has no
    such tool: 4001, its own answer) and its answer comes back."""
    server = server_process("--port", "0", "--api-key", KEY, "--mode", mode)
    no_reconnect = ReconnectPolicy(enabled=False)
    with (
        Computer("c1", [], reconnect=no_reconnect) as computer,
        Agent("a1", auth={"api_key": KEY}, reconnect=no_reconnect) as agent,
    ):
        computer.connect(server.url, "o1", auth={"api_key": KEY}, timeout=10)
        agent.connect(server.url, timeout=10)
        agent.join_office("o1", timeout=10)
        result = agent.call_tool("c1", "missing", {}, timeout=10)
        assert result.is_error and result.error_code == ErrorCode.TOOL_NOT_FOUND
    assert server.stop(signal.SIGTERM)[0] == 0


def test_gunicorn_logs_its_info_lines_at_log_level_info(server_process):
    server = server_process("--port", "0", "--api-key", KEY, "--log-level", "INFO")
    assert server.stop(signal.SIGTERM)[0] == 0
    assert "[INFO] Booting worker" in server.stderr


def test_api_key_can_come_from_the_environment_and_a_custom_field(server_process, monkeypatch):
    monkeypatch.setenv("SMCP_API_KEY", KEY)
    server = server_process("--port", "0", "--api-key-field", "token")
    peer = Peer(server.url, auth={"token": KEY})
    try:
        assert peer.join("agent", "a1", "o1") == (True, None)
    finally:
        peer.close()
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize("transports", [("polling", "websocket"), ("websocket",)])
def test_the_underscore_key_header_of_official_01x_clients_is_read(server_process, transports):
    """gunicorn drops header names with an underscore by default; `serve()` keeps them, so
    the `access_token` header (official 0.1.x clients' default auth) authenticates."""
    server = server_process("--port", "0", "--api-key", KEY)
    with pytest.raises(socketio.exceptions.ConnectionError):
        Peer(server.url, headers={"access_token": "wrong"}, transports=transports)
    peer = Peer(server.url, headers={"access_token": KEY}, transports=transports)
    try:
        assert peer.join("agent", "a1", "o1") == (True, None)
    finally:
        peer.close()
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize(
    "args", [["--threads", "0"], ["--connections", "0"], ["--mode", "eventlet"], ["--request-timeout", "0"], ["--port", "70000"]]
)
def test_bad_arguments_exit_2(args, capsys):
    assert main(["server", *args]) == 2
    assert "smcp-sync server:" in capsys.readouterr().err
