"""`GET /metrics` of a real Server while a real Agent and a real Computer (with an MCP
server child) work, read with prometheus_client's text parser: counters move by exactly
the calls made, refusals by code, histograms hold the calls. Under gunicorn:
tests/cli/test_server_operations.py; the Redis registry's: tests/scale_out/test_health_probes.py."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
import socketio
from computer.helpers import stdio_config
from office_parts import joined_agent, serving

from smcp_sync import Agent, Computer
from smcp_sync.computer import allow_all
from smcp_sync.connection.session import Connection, ReconnectPolicy
from smcp_sync.protocol.errors import AuthError, SMCPError
from smcp_sync.protocol.events import NAMESPACE
from smcp_sync.threads.worker_pool import WorkerPool
from smcp_sync.server import ServerLimits

from .http_probe import get
from .metrics_scrape import scrape, value
from .peers import Peer, wait_until

pytestmark = pytest.mark.timeout(60)

T = 20.0
KEY = "metrics-key"
NO_RECONNECT = ReconnectPolicy(enabled=False)


def test_counters_move_by_exactly_the_calls_made(no_leaks):
    with serving(auth=KEY) as server:
        before = scrape(server.url)
        assert value(before, "smcp_sessions", role="agent") == 0
        with (
            Computer("pc", [stdio_config("tools")], confirm=allow_all) as computer,
            joined_agent("a1", server.url, "o1", timeout=T, auth={"api_key": KEY}) as agent,
        ):
            computer.connect(server.url, "o1", auth={"api_key": KEY}, timeout=T)
            for text in ("one", "two", "three"):
                assert agent.call_tool("pc", "echo", {"text": text}, timeout=T).text == text
            assert agent.call_tool("pc", "fail", {"message": "no"}, timeout=T).is_error
            assert agent.call_tool("pc", "missing", {}, timeout=T).error_code == 4001
            with pytest.raises(SMCPError) as absent:
                agent.call_tool("nobody", "echo", {"text": "x"}, timeout=T)
            assert absent.value.code == 404
            with Agent("a2", auth={"api_key": KEY}, reconnect=NO_RECONNECT) as second:
                second.connect(server.url, timeout=T)
                with pytest.raises(SMCPError) as full:
                    second.join_office("o1", timeout=T)
                assert full.value.code == 4101
                with Agent("a3", auth={"api_key": "wrong"}, reconnect=NO_RECONNECT) as refused, pytest.raises(AuthError):
                    refused.connect(server.url, timeout=T)
                during = scrape(server.url)
        after = scrape(server.url)

    def moved(name: str, **labels: str) -> float:
        return value(during, name, **labels) - value(before, name, **labels)

    calls = "client:tool_call"
    assert moved("smcp_requests_total", event=calls, code="ok") == 3
    assert moved("smcp_requests_total", event=calls, code="tool_error") == 1  # the MCP server's isError result
    assert moved("smcp_requests_total", event=calls, code="4001") == 1
    assert moved("smcp_requests_total", event=calls, code="404") == 1
    assert moved("smcp_request_duration_seconds_count", event=calls) == 6
    assert moved("smcp_request_duration_seconds_bucket", event=calls, le="+Inf") == 6
    assert moved("smcp_request_duration_seconds_sum", event=calls) > 0
    assert moved("smcp_requests_total", event="server:join_office", code="ok") == 2
    assert moved("smcp_requests_total", event="server:join_office", code="4101") == 1
    assert moved("smcp_office_joins_total", role="agent") == 1
    assert moved("smcp_office_joins_total", role="computer") == 1
    assert moved("smcp_notifications_total", event="notify:enter_office") == 2
    assert moved("smcp_auth_failures_total") == 1
    assert value(during, "smcp_sessions", role="agent") == 1
    assert value(during, "smcp_sessions", role="computer") == 1
    assert value(during, "smcp_sessions", role="none") == 1  # a2, refused
    assert value(during, "smcp_offices") == 1
    assert value(during, "smcp_registry_ready") == 1
    assert value(after, "smcp_office_leaves_total", role="agent", reason="disconnected") == 1
    assert value(after, "smcp_office_leaves_total", role="computer", reason="disconnected") == 1
    assert value(after, "smcp_sessions", role="agent") == 0
    assert value(after, "smcp_pending_requests") == 0


def test_two_servers_in_one_process_count_their_own(no_leaks):
    with serving() as busy, serving() as idle, joined_agent("a1", busy.url, "o1", timeout=T):
        assert value(scrape(busy.url), "smcp_office_joins_total", role="agent") == 1
        assert value(scrape(idle.url), "smcp_office_joins_total", role="agent") == 0


def test_without_prometheus_client_metrics_answer_501_and_the_server_runs(no_leaks, monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails as if not installed
    monkeypatch.delitem(sys.modules, "smcp_sync.server.observability.metrics", raising=False)
    with serving() as server, joined_agent("a1", server.url, "o1", timeout=T) as agent:
        status, content_type, body = get(server.url + "/metrics")
        assert (status, content_type) == (501, "text/plain; charset=utf-8")
        assert body == b"GET /metrics needs the 'metrics' extra (prometheus_client): pip install 'smcp_sync[metrics]'\n"
        assert server.operator.metrics is None
        assert [(s.role, s.name) for s in agent.list_room(timeout=T)] == [("agent", "a1")]


def test_events_a_full_handler_pool_refuses_are_counted_500(no_leaks):
    """Answered 500 busy before any handler runs; an event name this Server does not
    handle is the client's, of any value: counted as "other"."""
    with serving() as server, Connection("agent", "a1") as connection:
        server.sio.handler_pool.shutdown(5.0)
        server.sio._handler_pool = WorkerPool("smcp-server-worker", max_workers=1, max_queued=0)
        release, blocked = threading.Event(), threading.Event()
        server.sio.on("block", lambda sid, payload: (blocked.set(), release.wait(10)) and {}, namespace=NAMESPACE)
        connection.connect(server.url, timeout=T)
        try:
            connection.emit("block", {})
            assert blocked.wait(T)
            for name in ("block", "any-name-at-all"):
                with pytest.raises(SMCPError, match="busy"):
                    connection.call(name, {}, timeout=T)
        finally:
            release.set()
        samples = scrape(server.url)
    assert value(samples, "smcp_requests_total", event="other", code="500") == 2


def test_refused_keys_are_counted_checked_or_backed_off(no_leaks):
    """Past `max_auth_failures_per_ip` an address is backed off (1 s, then doubling):
    its attempts are refused unchecked. Each refusal is counted once, one way or the
    other; three attempts in a row fall mostly within the first backoff."""
    with serving(auth=KEY, limits=ServerLimits(max_auth_failures_per_ip=1)) as server:
        for _ in range(3):
            with pytest.raises(socketio.exceptions.ConnectionError):
                Peer(server.url, auth={"api_key": "wrong"})
        samples = scrape(server.url)
    checked, unchecked = value(samples, "smcp_auth_failures_total"), value(samples, "smcp_auth_backoff_refusals_total")
    assert checked + unchecked == 3 and checked >= 1 and unchecked >= 1


def test_bytes_count_each_socketio_packet_received_and_sent(no_leaks):
    """The Server receives exactly the packets a real Agent's Engine.IO client sent (its
    join, with an office id of known size, and the office listing the Agent asks for on
    joining), and sends exactly the answers that client received."""
    office = "o" * 200
    with serving() as server, Agent("a1") as agent:
        agent.connect(server.url, timeout=T)
        sent, received = wire_of(agent)
        before = scrape(server.url)
        agent.join_office(office, timeout=T)
        wait_until(lambda: len(received) == 2)  # the join's answer, the listing's
        after = scrape(server.url)
        sent, received = list(sent), list(received)  # not the leave's DISCONNECT
    assert [packet.partition('",')[0] for packet in sent] == ['2/smcp,1["server:join_office', '2/smcp,2["server:list_room']
    assert [packet[:9] for packet in received] == ["3/smcp,1[", "3/smcp,2["]
    assert office in sent[0]
    moved_in = value(after, "smcp_received_bytes_total") - value(before, "smcp_received_bytes_total")
    moved_out = value(after, "smcp_sent_bytes_total") - value(before, "smcp_sent_bytes_total")
    assert moved_in == sum(len(packet.encode()) for packet in sent) > 200
    assert moved_out == sum(len(packet.encode()) for packet in received)


def wire_of(agent: Agent) -> tuple[list[str], list[str]]:
    """The Socket.IO packets `agent`'s own Engine.IO client sends and receives from now
    on, as they go on and come off the wire."""
    eio = agent._connection._sio.eio
    sent: list[str] = []
    received: list[str] = []
    send, trigger = eio.send, eio._trigger_event

    def sending(data: str) -> None:
        sent.append(data)
        send(data)

    def triggered(event: str, *args: Any, **kwargs: Any) -> Any:
        if event == "message":
            received.append(args[0])
        return trigger(event, *args, **kwargs)

    eio.send, eio._trigger_event = sending, triggered
    return sent, received
