"""A valid payload for every event a client may send (agent "a1", computer "c1", office "office-1")."""

from __future__ import annotations

from smcp_sync.protocol import events

CLIENT_REQUESTS = {
    events.TOOL_CALL: {"agent": "a1", "req_id": "r", "computer": "c1", "tool_name": "echo", "params": {"x": 1}, "timeout": 5},
    events.GET_CONFIG: {"agent": "a1", "req_id": "r", "computer": "c1"},
    events.GET_TOOLS: {"agent": "a1", "req_id": "r", "computer": "c1"},
    events.GET_DESKTOP: {"agent": "a1", "req_id": "r", "computer": "c1", "desktop_size": 3},
    events.GET_FINDER: {"agent": "a1", "req_id": "r", "computer": "c1", "keywords": ["q"], "limit": 5},
    events.READ_RESOURCE: {"agent": "a1", "req_id": "r", "computer": "c1", "uri": "dpe://srv/doc"},
    events.GET_RESOURCES: {"agent": "a1", "req_id": "r", "computer": "c1", "mcp_server": "srv"},
    events.COMPLETE: {
        "agent": "a1",
        "req_id": "r",
        "computer": "c1",
        "ref": {"type": "ref/resource", "uri": "dpe://srv/{doc_ref}"},
        "argument": {"name": "doc_ref", "value": "a"},
    },
}
assert set(CLIENT_REQUESTS) == events.CLIENT_EVENTS

SERVER_REQUESTS = {
    events.JOIN_OFFICE: {"role": "computer", "name": "c1", "office_id": "office-1"},
    events.LEAVE_OFFICE: {"office_id": "office-1"},
    events.LIST_ROOM: {"agent": "a1", "req_id": "r", "office_id": "office-1"},
    events.CANCEL_TOOL_CALL: {"agent": "a1", "req_id": "r"},
    **{update: {"computer": "c1"} for update in events.UPDATE_TO_NOTIFICATION},
}
assert set(SERVER_REQUESTS) == events.SERVER_EVENTS

ALL_REQUESTS = {**CLIENT_REQUESTS, **SERVER_REQUESTS}

#: Events answered with the two-value ack `(ok, message)` instead of an error object.
TWO_VALUE_ACK = frozenset({events.JOIN_OFFICE, events.LEAVE_OFFICE})
