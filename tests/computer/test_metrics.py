"""A Computer's own metrics (`ComputerMetrics`) with a real MCP server child, read with
prometheus_client's text parser: calls by server and outcome, their latency, the
server's state and its connections across a crash and restart."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from smcp_sync import Computer
from smcp_sync.computer import allow_all
from smcp_sync.computer.metrics import ComputerMetrics

from .helpers import FAST, stdio_config, wait_until

pytestmark = pytest.mark.timeout(60)


def samples(metrics: ComputerMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A scrape through the WSGI app the host mounts."""
    answered: list[Any] = []
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "QUERY_STRING": ""}
    body = b"".join(metrics.wsgi_app(environ, lambda *a: answered.append(a)))
    assert answered[0][0].startswith("200")
    assert dict(answered[0][1])["Content-Type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(body.decode()) for s in f.samples
    }


def test_calls_states_and_restarts_are_counted(no_leaks):
    with Computer("pc", [stdio_config("tools")], confirm=allow_all, policy=FAST) as computer:
        metrics = ComputerMetrics(computer)
        for text in ("a", "b"):
            assert computer.call_tool("echo", {"text": text}, timeout=10).text == text
        assert computer.call_tool("fail", {"message": "no"}, timeout=10).is_error
        assert computer.call_tool("crash", {}, timeout=10).error_code == 4003
        wait_until(lambda: computer.servers.statuses()[0].generation == 2 and computer.servers.statuses()[0].running, 20)
        seen = samples(metrics)

    def value(name: str, **labels: str) -> float:
        return seen.get((name, frozenset(labels.items())), 0.0)

    assert value("smcp_computer_tool_calls_total", server="tools", outcome="ok") == 2
    assert value("smcp_computer_tool_calls_total", server="tools", outcome="tool_error") == 1
    assert value("smcp_computer_tool_calls_total", server="tools", outcome="4003") == 1
    assert value("smcp_computer_tool_call_duration_seconds_count", server="tools") == 4
    assert value("smcp_computer_mcp_server_state", server="tools", state="running") == 1
    assert value("smcp_computer_mcp_server_state", server="tools", state="restarting") == 0
    assert value("smcp_computer_mcp_server_connections_total", server="tools") == 2
