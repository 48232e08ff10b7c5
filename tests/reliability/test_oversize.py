"""Oversize messages: the Server drops a connection on which one message exceeds its
`max_http_buffer_size`. Agents and Computers learn the limit from the Server and refuse
such a message themselves, with an error that says so, and keep their connection."""

from __future__ import annotations

import pytest

from smcp_sync.protocol import ErrorCode, events
from smcp_sync.protocol.errors import BadRequestError, InternalError

from .parts import Notes, join_agent, start_computer, start_server, tool_server

OFFICE = "oversize"
LIMIT = 64 * 1024


@pytest.mark.timeout(60)
def test_messages_over_the_servers_limit_are_refused_clearly_and_connections_stay(stack):
    server = start_server(stack, max_http_buffer_size=LIMIT)
    computer = start_computer(stack, "c1", server.url, OFFICE, tool_server())
    agent = join_agent(stack, "a1", server.url, OFFICE)
    notes = Notes.of_agent(agent)
    sessions = {m.sid for m in server.registry.members(OFFICE)}

    # A request too big for the Server: refused before it is sent.
    with pytest.raises(BadRequestError) as request_refused:
        agent.call_tool("c1", "echo", {"text": "x" * LIMIT}, timeout=10)
    message = request_refused.value.message
    assert request_refused.value.code == ErrorCode.BAD_REQUEST
    assert "client:tool_call" in message and "max_http_buffer_size" in message and f"{LIMIT:,}" in message

    # An answer too big for the Server: the Computer answers with an error instead.
    with pytest.raises(InternalError) as answer_refused:
        agent.call_tool("c1", "big", {"size": LIMIT}, timeout=10)
    assert "client:tool_call" in answer_refused.value.message
    assert "max_http_buffer_size" in answer_refused.value.message

    # Just under the limit is fine, and nobody was disconnected meanwhile.
    assert len(agent.call_tool("c1", "big", {"size": LIMIT - 1024}, timeout=10).text) == LIMIT - 1024
    assert {m.sid for m in server.registry.members(OFFICE)} == sessions
    assert computer.tool_call_history()[-1].ok and notes.notes == []
    assert agent.call_tool("c1", "echo", {"text": "still here"}, timeout=10).text == "still here"
    assert agent.connected and events.LEAVE_OFFICE_NOTIFICATION not in {event for event, _ in notes.notes}
