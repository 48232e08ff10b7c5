"""The operator's side of `smcp-sync server` under gunicorn, in each of `serve()`'s
modes (gthread, gevent): the probes, the metrics of the worker that serves them, and
the Admin UI turned on by --admin-user / --admin-password."""

from __future__ import annotations

import signal

import pytest
import socketio
from server.http_probe import probe
from server.test_admin_ui import admin_client, next_of
from server.metrics_scrape import scrape, value
from server.peers import Peer
from server.test_cli_server import ServerProcess

from smcp_sync.cli import main
from smcp_sync.server.limits.limits import SERVE_MODES

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def serving(no_leaks):
    started: list[ServerProcess] = []

    def start(*args: str) -> ServerProcess:
        started.append(ServerProcess("--port", "0", *args))
        return started[-1]

    yield start
    for process in started:
        process.kill()


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_the_probes_and_the_workers_metrics_answer_in_each_mode(serving, mode):
    server = serving("--mode", mode)
    assert probe(server.url + "/health/live") == (200, {"status": "live"})
    assert probe(server.url + "/health/ready")[1]["status"] == "ready"
    computer, agent = Peer(server.url), Peer(server.url)
    try:
        assert computer.join("computer", "c1", "o1") == (True, None)
        assert agent.join("agent", "a1", "o1") == (True, None)
        computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": "hi"}]})
        call = {"agent": "a1", "req_id": "t", "computer": "c1", "tool_name": "echo", "params": {}, "timeout": 5}
        for _ in range(3):
            assert agent.call("client:tool_call", call) == {"content": [{"type": "text", "text": "hi"}]}
        samples = scrape(server.url)
    finally:
        computer.close()
        agent.close()
    assert value(samples, "smcp_requests_total", event="client:tool_call", code="ok") == 3
    assert value(samples, "smcp_request_duration_seconds_count", event="client:tool_call") == 3
    assert value(samples, "smcp_office_joins_total", role="computer") == 1
    assert value(samples, "smcp_sessions", role="agent") == 1
    assert server.stop(signal.SIGTERM)[0] == 0


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_admin_user_and_password_turn_the_admin_ui_on(serving, monkeypatch, mode):
    """In mode gevent the worker builds the Server again: its Admin UI is the one served."""
    monkeypatch.setenv("SMCP_ADMIN_PASSWORD", "from-the-environment")
    server = serving("--mode", mode, "--admin-user", "operator")
    with pytest.raises(socketio.exceptions.ConnectionError):
        admin_client(server.url, {"username": "operator", "password": "wrong"})
    client, received = admin_client(server.url, {"username": "operator", "password": "from-the-environment"})
    try:
        assert next_of(received, "config") == {"supportedFeatures": ["AGGREGATED_EVENTS"]}  # read-only
    finally:
        client.disconnect()
    assert server.stop(signal.SIGTERM)[0] == 0


def test_admin_user_without_a_password_exits_2(capsys, monkeypatch):
    monkeypatch.delenv("SMCP_ADMIN_PASSWORD", raising=False)
    assert main(["server", "--admin-user", "operator"]) == 2
    assert "--admin-user needs --admin-password" in capsys.readouterr().err
