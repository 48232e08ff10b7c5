"""One trace from Agent to MCP server (`smcp_sync.tracing`): with OpenTelemetry's SDK
and its in-memory exporter in the process, a tool call's spans are the Agent's CLIENT
span, the Server's routing span, the Computer's handling span and the mcp SDK's own
client span, each the parent of the next; also with the Agent and the Computer on two
Server nodes sharing a real redis-server (the node the Agent is on routes; the other
relays through Redis without a span of its own). In a child process: a tracer provider
is set once per process, and this one must stay without (nothing is traced then, and
the request carries nothing)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest
from computer.helpers import TOOL_SERVER
from office_parts import joined_agent, joined_connection
from scale_out.parts import redis_server

from smcp_sync.protocol import events
from smcp_sync.tracing import tracing

pytestmark = pytest.mark.timeout(90)

T = 20.0

TRACED = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.computer import allow_all
from smcp_sync.server import RedisOptions

config = {"name": "tools", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [sys.argv[1]]}}
redis_url = sys.argv[2] if len(sys.argv) > 2 else None
redis = RedisOptions(redis_url) if redis_url else None
with (
    SMCPServer(redis=redis) as server,
    SMCPServer(redis=redis) as other,
    Computer("pc", [config], confirm=allow_all) as computer,
    Agent("a1") as agent,
):
    url = server.start()
    computer.connect(other.start() if redis_url else url, "o1", timeout=20)
    agent.connect(url, timeout=20)
    agent.join_office("o1", timeout=20)
    assert agent.call_tool("pc", "echo", {"text": "hi"}, timeout=20).text == "hi"
    spans = exporter.get_finished_spans()
print(json.dumps([
    {"name": s.name, "kind": s.kind.name, "trace": s.context.trace_id, "span": s.context.span_id,
     "parent": s.parent.span_id if s.parent else None}
    for s in spans
]))
"""


@pytest.mark.parametrize("nodes", ["one Server", "two nodes on Redis"])
def test_a_tool_call_is_one_trace_across_agent_server_computer_and_mcp(no_leaks, nodes):
    pytest.importorskip("opentelemetry.sdk")
    with contextlib.ExitStack() as stack:
        redis = [stack.enter_context(redis_server()).url] if nodes == "two nodes on Redis" else []
        done = subprocess.run([sys.executable, "-c", TRACED, TOOL_SERVER, *redis], capture_output=True, text=True, timeout=80)
    assert done.returncode == 0, done.stderr[-3000:]
    spans = json.loads(done.stdout.splitlines()[-1])
    [call] = [s for s in spans if s["name"] == "smcp client:tool_call"]
    trace = [s for s in spans if s["trace"] == call["trace"]]
    by_parent = {s["parent"]: s for s in trace}
    chain = [call]
    while chain[-1]["span"] in by_parent:
        chain.append(by_parent[chain[-1]["span"]])
    assert [(s["name"], s["kind"]) for s in chain] == [
        ("smcp client:tool_call", "CLIENT"),
        ("smcp route client:tool_call", "SERVER"),
        ("smcp handle client:tool_call", "SERVER"),
        ("MCP send tools/call echo", "CLIENT"),
    ]
    assert call["parent"] is None and len(trace) == len(chain)


def test_without_a_tracer_provider_nothing_is_carried(server):
    """This process sets none: requests go out as they were, and no span is made."""
    assert not tracing()
    seen: list[dict] = []

    def answer(payload: dict) -> dict:
        seen.append(payload)
        return {"content": [{"type": "text", "text": "ok"}]}

    with (
        joined_connection("computer", "pc", server.url, "o1", timeout=T, handlers={events.TOOL_CALL: answer}),
        joined_agent("a1", server.url, "o1", timeout=T) as agent,
    ):
        assert agent.call_tool("pc", "echo", {"text": "x"}, timeout=T).text == "ok"
    assert "_meta" not in seen[0] and "_meta" not in seen[0]["params"]
