"""Redis restarted (empty: no persistence) under two running Server nodes: joins are
refused with a clear error while it is down, and once it is back the nodes write their
members back and route again, without a restart of their own."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import Agent
from smcp_sync.connection.session import Connection, ReconnectPolicy
from smcp_sync.protocol import ErrorCode, events, to_wire
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.models import CallToolResult, TextContent

from .parts import nodes, redis_server

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 20.0
NO_RECONNECT = ReconnectPolicy(enabled=False)


def named_computer(url: str, office: str, name: str) -> contextlib.AbstractContextManager[Connection]:
    """A bare Computer whose every tool call answers with its name."""
    answer = lambda payload: to_wire(CallToolResult(content=[TextContent(text=name)]))  # noqa: E731
    return joined_connection(
        "computer", name, url, office, timeout=TIMEOUT, handlers={events.TOOL_CALL: answer}, reconnect=NO_RECONNECT
    )


def answered_by(agent: Agent, computer: str) -> Any:
    """The text of a short tool call, or None while it fails."""
    try:
        return agent.call_tool(computer, "who", {}, timeout=1.0).text
    except SMCPError:
        return None


def listed(agent: Agent) -> set[tuple[str, str]] | None:
    try:
        return {(s.role, s.name) for s in agent.list_room(timeout=2.0)}
    except SMCPError:
        return None


def test_the_nodes_recover_when_redis_comes_back() -> None:
    with redis_server() as redis, nodes(redis.url, 2) as (a, b), contextlib.ExitStack() as stack:
        agent = stack.enter_context(Agent("agent", reconnect=NO_RECONNECT))
        agent.connect(a.url, timeout=TIMEOUT)
        agent.join_office("kept", timeout=TIMEOUT)
        stack.enter_context(named_computer(b.url, "kept", "pc"))
        assert agent.call_tool("pc", "who", {}, timeout=TIMEOUT).text == "pc"

        redis.stop()
        late = stack.enter_context(Agent("late", reconnect=NO_RECONNECT))
        late.connect(b.url, timeout=TIMEOUT)
        with pytest.raises(SMCPError) as refused:
            late.join_office("new", timeout=TIMEOUT)
        assert refused.value.code == ErrorCode.INTERNAL_ERROR
        assert "registry" in refused.value.message and "unavailable" in refused.value.message

        redis.start()  # empty: every node writes its members back
        wait_until(lambda: listed(agent) == {("agent", "agent"), ("computer", "pc")}, TIMEOUT, "members back")
        wait_until(lambda: answered_by(agent, "pc") == "pc", TIMEOUT, "calls routed across nodes again")
        late.join_office("new", timeout=TIMEOUT)
        stack.enter_context(named_computer(a.url, "new", "pc2"))
        assert answered_by(late, "pc2") == "pc2"
        assert listed(late) == {("agent", "late"), ("computer", "pc2")}
