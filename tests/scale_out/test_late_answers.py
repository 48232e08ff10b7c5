"""A late answer never settles another call. When a Computer's session is heard gone
while it is alive (its node was declared dead and wrote it back: a long stall), the
nodes fail the calls waiting on it and drop python-socketio's ack table for its sid; a
table started again must not hand out the ack ids of the calls that were failed, or the
Computer's late answer to one of them settles a new call (issue 23). Two Server nodes in
this process on a real `redis-server`; the gone message is published as a purge does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from typing import Any

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import SMCPServer
from smcp_sync.connection.session import Connection
from smcp_sync.protocol import ErrorCode, events, to_wire
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.models import CallToolResult, TextContent
from smcp_sync.server import RedisOptions

from .parts import redis_server

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 20.0


class Computer:
    """Tool calls held until the test releases them, one event per tool name."""

    def __init__(self) -> None:
        self.arrived = {tool: threading.Event() for tool in ("first", "second")}
        self.release = {tool: threading.Event() for tool in ("first", "second")}

    def answer(self, payload: dict[str, Any]) -> Any:
        tool = payload["tool_name"]
        self.arrived[tool].set()
        assert self.release[tool].wait(TIMEOUT)
        return to_wire(CallToolResult(content=[TextContent(text=tool)]))


def outcome(agent: Connection, tool: str) -> Any:
    request = {"agent": "agent", "req_id": uuid.uuid4().hex, "computer": "pc", "tool_name": tool, "params": {}, "timeout": 10.0}
    try:
        return agent.call(events.TOOL_CALL, request, TIMEOUT)["content"][0]["text"]
    except SMCPError as exc:
        return exc.code


def test_a_late_answer_to_a_call_failed_when_its_computer_was_heard_gone_settles_no_other(
    no_leaks: None, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("socketio", "socketio.server"):  # python-socketio's note of an answer nobody waits for
        caplog.set_level(logging.WARNING, logger=name)
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        a = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        b = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        a.start(), b.start()
        agent = stack.enter_context(joined_connection("agent", "agent", a.url, "o", timeout=TIMEOUT))
        computer = Computer()
        pc = stack.enter_context(
            joined_connection("computer", "pc", b.url, "o", timeout=TIMEOUT, handlers={events.TOOL_CALL: computer.answer})
        )
        stack.callback(lambda: [event.set() for event in computer.release.values()])  # never left waiting
        results: dict[str, Any] = {}
        calls = {tool: threading.Thread(target=lambda tool=tool: results.update({tool: outcome(agent, tool)})) for tool in ("first", "second")}
        calls["first"].start()
        assert computer.arrived["first"].wait(TIMEOUT)
        redis.command("PUBLISH", a.registry.prefix + "gone", pc.sid)  # as a purge of its node does
        calls["first"].join(TIMEOUT)
        assert results["first"] == ErrorCode.NOT_FOUND  # failed at once, its answer still to come

        calls["second"].start()
        assert computer.arrived["second"].wait(TIMEOUT)  # the second call waits on node A
        computer.release["first"].set()  # the first call's answer comes now
        # it reaches node A: ignored there (an id no call waits on), or settling the second
        heard = lambda: "Unknown callback received" in caplog.text or "second" in results  # noqa: E731
        wait_until(heard, TIMEOUT, "the late answer at node A")
        computer.release["second"].set()
        calls["second"].join(TIMEOUT)
        assert results["second"] == "second"  # not the first call's answer
        assert pc.connected
