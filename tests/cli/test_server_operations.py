"""The operator's paths of `smcp-sync server` under gunicorn, in each of `serve()`'s
modes (gthread, gevent): the probes, and the metrics of the worker that serves them."""

from __future__ import annotations

import signal

import pytest
from server.http_probe import probe
from server.test_cli_server import ServerProcess

from smcp_sync.server.limits import SERVE_MODES

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
def test_the_probes_answer_in_each_mode(serving, mode):
    server = serving("--mode", mode)
    assert probe(server.url + "/health/live") == (200, {"status": "live"})
    assert probe(server.url + "/health/ready")[1]["status"] == "ready"
    assert server.stop(signal.SIGTERM)[0] == 0
