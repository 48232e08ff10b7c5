"""A Computer's Prometheus metrics (the `metrics` extra: prometheus_client), for a host
process that runs one for long: tool calls by MCP server and outcome with their
latency, and each MCP server's state and connections (a restart is a connection more).
The host serves them: `wsgi_app` mounted at a path of its web app (prometheus_client's:
it answers in the format the scraper asks for), or `registry` with any of
prometheus_client's exporters. Labels are bounded: the configured servers' names, states and
outcome codes, never a tool's arguments.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .computer import Computer
from .mcp.status import ServerState
from .tools.history import ToolCallRecord

#: Seconds, from a local call to the longest ones.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class ComputerMetrics:
    """The metrics of `computer`, in a registry of their own (`registry`)."""

    def __init__(self, computer: Computer) -> None:
        self.registry = CollectorRegistry()
        self._calls = Counter(
            "smcp_computer_tool_calls",
            "Tool calls routed to an MCP server, by server and outcome (ok, tool_error, or the SMCP error code)",
            ["server", "outcome"],
            registry=self.registry,
        )
        self._durations = Histogram(
            "smcp_computer_tool_call_duration_seconds",
            "Seconds a tool call took, confirmation included, by MCP server",
            ["server"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_ServerStates(computer))
        #: WSGI app answering every request with the metrics (mount it at e.g. /metrics).
        self.wsgi_app = make_wsgi_app(self.registry)
        computer.add_tool_call_listener(self._ended)

    def _ended(self, call: ToolCallRecord) -> None:
        outcome = "ok" if call.ok else "tool_error" if call.error_code is None else str(call.error_code)
        self._calls.labels(call.server, outcome).inc()
        self._durations.labels(call.server).observe(call.duration)


class _ServerStates(Collector):
    """Each MCP server's state and connections, read at each scrape."""

    def __init__(self, computer: Computer) -> None:
        self._computer = computer

    def collect(self) -> Iterator[Any]:
        statuses = self._computer.servers.statuses()
        states = GaugeMetricFamily(
            "smcp_computer_mcp_server_state", "1 for each MCP server's current state", labels=["server", "state"]
        )
        connections = CounterMetricFamily(
            "smcp_computer_mcp_server_connections",
            "Successful connections to each MCP server (restarts: this minus one)",
            labels=["server"],
        )
        for status in statuses:
            for state in ServerState:
                states.add_metric([status.bundle_id, state.value], 1 if status.state is state else 0)
            connections.add_metric([status.bundle_id], status.generation)
        yield states
        yield connections
