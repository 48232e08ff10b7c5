"""The trace context our Agent carries (`_meta` of each request, `smcp_sync.tracing`)
does not break the official SDK as a peer: a traced Agent of ours calls each official
version's Computer through that version's Server, and through our Server (which passes
the field on to their Computer). The traced Agent runs in a child process with
OpenTelemetry's SDK (a tracer provider is set once per process); its client span ends
without an error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from interop.harness import echo_mcp_config, start_official_computer, start_official_server

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"

TRACED_AGENT = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from smcp_sync import Agent
from smcp_sync.connection.session import ReconnectPolicy

url, office, computer, tool, auth = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
with Agent("a-traced", auth=auth, reconnect=ReconnectPolicy(enabled=False)) as agent:
    agent.connect(url, timeout=20)
    agent.join_office(office, timeout=20)
    result = agent.call_tool(computer, tool, {"text": "traced"}, timeout=20)
spans = [(s.name, s.status.status_code.name) for s in exporter.get_finished_spans()]
print(json.dumps({"text": result.text, "is_error": result.is_error, "spans": spans}))
"""


def traced_call(url: str, office: str, computer: str, tool: str, auth: dict | None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", TRACED_AGENT, url, office, computer, tool, json.dumps(auth)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_through_their_server_to_their_computer(official_peer, no_leaks, spawn):
    pytest.importorskip("opentelemetry.sdk")
    peer = official_peer
    server = spawn(start_official_server(peer.python, api_key=KEY, trace=False))
    config = echo_mcp_config(peer.python)
    spawn(start_official_computer(peer.python, server.url, "o-traced", "c-off", config, auth_via=peer.auth_via_own_server))
    answer = traced_call(server.url, "o-traced", "c-off", peer.tool("echo", "echo"), peer.server_auth(KEY))
    assert (answer["text"], answer["is_error"]) == ("traced", False)
    assert ["smcp client:tool_call", "UNSET"] in answer["spans"]


def test_through_our_server_to_their_computer(official_peer, server, spawn):
    """Our Server passes `_meta` on unchanged (this process sets no tracer provider)."""
    pytest.importorskip("opentelemetry.sdk")
    peer = official_peer
    spawn(start_official_computer(peer.python, server.url, "o-traced", "c-off", echo_mcp_config(peer.python), auth_via="auth"))
    answer = traced_call(server.url, "o-traced", "c-off", peer.tool("echo", "echo"), None)
    assert (answer["text"], answer["is_error"]) == ("traced", False)
    assert ["smcp client:tool_call", "UNSET"] in answer["spans"]
