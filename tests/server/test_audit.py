"""The audit trail (logger ``smcp_sync.audit``) of a real Server while a real Agent and a
real Computer (with an MCP server child) work: one record per tool call, cancel, join,
leave and refusal, as JSON lines (`JsonLinesFormatter`); no credential in any, and a
call's arguments and result only when switched on."""

from __future__ import annotations

import io
import json
import logging
import threading
from typing import Any, Iterator

import pytest
from computer.helpers import stdio_config, wait_until
from office_parts import joined_agent, serving

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.computer import allow_all
from smcp_sync.connection.session import ReconnectPolicy
from smcp_sync.protocol.errors import AuthError, SMCPError
from smcp_sync.server.observability import AuditOptions, Observability
from smcp_sync.server.observability.audit import AUDIT_LOGGER, JsonLinesFormatter

pytestmark = pytest.mark.timeout(60)

T = 20.0
KEY = "audit-key-not-for-logs"
SECRET_ARGUMENT = "argument-only-when-switched-on"
NO_RECONNECT = ReconnectPolicy(enabled=False)
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class AuditLines:
    """The audit logger's records as JSON lines, for the test's length."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.text = io.StringIO()  # the same records through a plain formatter: their messages
        self._lock = threading.Lock()

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [record for record in self.records() if record["kind"] == kind]


@pytest.fixture
def audit() -> Iterator[AuditLines]:
    lines = AuditLines()
    handler = logging.StreamHandler(lines.stream)
    handler.setFormatter(JsonLinesFormatter())
    logger = logging.getLogger(AUDIT_LOGGER)
    level = logger.level
    text = logging.StreamHandler(lines.text)
    logger.addHandler(handler)
    logger.addHandler(text)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(handler)
    logger.removeHandler(text)
    logger.setLevel(level)


def office_work(server: SMCPServer, audit: AuditLines) -> None:
    """Joins, calls (answered, refused by the Server, cancelled), a refused join, leaves."""
    url = server.url
    with (
        Computer("pc", [stdio_config("tools")], confirm=allow_all) as computer,
        joined_agent("a1", url, "o1", timeout=T, auth={"api_key": KEY}) as agent,
    ):
        computer.connect(url, "o1", auth={"api_key": KEY}, timeout=T)
        params = {"text": SECRET_ARGUMENT, "_meta": {"traceparent": TRACEPARENT}}
        assert agent.call_tool("pc", "echo", params, timeout=T).text == SECRET_ARGUMENT
        with pytest.raises(SMCPError):
            agent.call_tool("nobody", "echo", {"text": "x"}, timeout=T)
        slow = agent.submit_tool_call("pc", "sleep", {"seconds": 30}, timeout=T)
        wait_until(lambda: len(server.pending) == 1, T, "the slow call forwarded")
        agent.cancel_tool_call(slow.req_id)
        assert slow.result(T).is_error
        wait_until(lambda: len(audit.of("tool_call")) == 3, T, "the cancelled call's record")
        with Agent("a2", auth={"api_key": KEY}, reconnect=NO_RECONNECT) as second:
            second.connect(url, timeout=T)
            with pytest.raises(SMCPError):
                second.join_office("o1", timeout=T)
        with Agent("a3", auth={"api_key": KEY + "-wrong"}, reconnect=NO_RECONNECT) as refused, pytest.raises(AuthError):
            refused.connect(url, timeout=T)
        agent.leave_office(timeout=T)


def test_records_for_calls_refusals_and_a_cancel_without_secrets(no_leaks, audit):
    with serving(auth=KEY) as server:
        office_work(server, audit)
    calls = audit.of("tool_call")
    assert [(c["tool"], c["code"]) for c in calls[:2]] == [("echo", "ok"), ("echo", "404")]
    first = calls[0]
    assert {k: first[k] for k in ("office", "agent", "computer", "event", "role", "name", "trace_id")} == {
        "office": "o1", "agent": "a1", "computer": "pc", "event": "client:tool_call", "role": "agent", "name": "a1",
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
    }  # fmt: skip
    assert first["duration_ms"] > 0 and first["node"] and first["time"].endswith("+00:00")
    assert first["level"] == "INFO" and first["logger"] == AUDIT_LOGGER
    assert "arguments" not in first and "result" not in first
    assert calls[2]["tool"] == "sleep"
    [cancel] = audit.of("cancel")
    assert (cancel["req_id"], cancel["agent"], cancel["office"]) == (calls[2]["req_id"], "a1", "o1")
    refusals = {(r["event"], r["code"]) for r in audit.of("refusal")}
    assert refusals == {("server:join_office", "4101"), ("connect", "401")}
    joins = {(j["role"], j["name"], j["office"]) for j in audit.of("join")}
    assert joins == {("agent", "a1", "o1"), ("computer", "pc", "o1")}
    leaves = {(j["role"], j["name"], j["reason"]) for j in audit.of("leave")}
    assert leaves == {("agent", "a1", "left"), ("computer", "pc", "disconnected")}
    everything = json.dumps(audit.records()) + audit.text.getvalue()
    assert KEY not in everything and SECRET_ARGUMENT not in everything
    assert "tool_call office=o1 role=agent name=a1 agent=a1 computer=pc tool=echo event=client:tool_call code=ok\n" in audit.text.getvalue()


def test_arguments_and_results_only_when_switched_on(no_leaks, audit):
    observability = Observability(audit=AuditOptions(arguments=True, results=True))
    with (
        serving(auth=KEY, observability=observability) as server,
        Computer("pc", [stdio_config("tools")], confirm=allow_all) as computer,
    ):
        computer.connect(server.url, "o1", auth={"api_key": KEY}, timeout=T)
        with joined_agent("a1", server.url, "o1", timeout=T, auth={"api_key": KEY}) as agent:
            agent.call_tool("pc", "echo", {"text": SECRET_ARGUMENT}, timeout=T)
    [call] = audit.of("tool_call")
    assert call["arguments"] == {"text": SECRET_ARGUMENT}
    assert call["result"]["content"][0]["text"] == SECRET_ARGUMENT
    assert KEY not in json.dumps(audit.records())


def test_nothing_is_written_while_the_logger_is_off_for_info(no_leaks):
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(AUDIT_LOGGER)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        with serving() as server, joined_agent("a1", server.url, "o1", timeout=T):
            pass
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert records == []
