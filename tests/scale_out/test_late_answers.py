"""A late answer never settles another call. When a Computer's session is heard gone
while it is alive (its node was declared dead and wrote it back: a long stall), the
nodes fail the calls waiting on it and drop python-socketio's ack table for its sid; a
table started again must not hand out the ack ids of the calls that were failed, or the
Computer's late answer to one of them settles a new call (issue 23). Two Server nodes in
this process on a real `redis-server`; the gone message is published as a purge does.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from typing import Any

import pytest
from office_parts import joined_connection

from smcp_sync import SMCPServer
from smcp_sync.connection.session import Connection
from smcp_sync.protocol import ErrorCode, events, to_wire
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.models import CallToolResult, TextContent

from .parts import redis_server

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 20.0
#: How long each tool takes: the first call's answer comes while the second call waits.
FIRST, SECOND = 1.0, 2.0


def answer(payload: dict[str, Any]) -> Any:
    time.sleep(FIRST if payload["tool_name"] == "first" else SECOND)
    return to_wire(CallToolResult(content=[TextContent(text=payload["tool_name"])]))


def outcome(agent: Connection, tool: str) -> Any:
    request = {"agent": "agent", "req_id": uuid.uuid4().hex, "computer": "pc", "tool_name": tool, "params": {}, "timeout": 10.0}
    try:
        return agent.call(events.TOOL_CALL, request, TIMEOUT)["content"][0]["text"]
    except SMCPError as exc:
        return exc.code


def test_a_late_answer_to_a_call_failed_when_its_computer_was_heard_gone_settles_no_other(no_leaks) -> None:
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        a = stack.enter_context(SMCPServer(redis_url=redis.url))
        b = stack.enter_context(SMCPServer(redis_url=redis.url))
        a.start(), b.start()
        agent = stack.enter_context(joined_connection("agent", "agent", a.url, "o", timeout=TIMEOUT))
        pc = stack.enter_context(
            joined_connection("computer", "pc", b.url, "o", timeout=TIMEOUT, handlers={events.TOOL_CALL: answer})
        )
        results: dict[str, Any] = {}
        first = threading.Thread(target=lambda: results.update(first=outcome(agent, "first")))
        first.start()
        time.sleep(0.4)  # the first call is at the Computer
        redis.command("PUBLISH", a.registry.prefix + "gone", pc.sid)  # as a purge of its node does
        first.join(TIMEOUT)
        assert results["first"] == ErrorCode.NOT_FOUND  # failed at once, its answer still to come
        assert outcome(agent, "second") == "second"  # not the first call's answer, arriving meanwhile
        assert pc.connected
