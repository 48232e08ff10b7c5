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
    events.GET_SKILLS: {"agent": "a1", "req_id": "r", "computer": "c1"},
    events.GET_SKILL: {"agent": "a1", "req_id": "r", "computer": "c1", "name": "mcp:srv:notes", "rel_path": "SKILL.md"},
    events.GET_BLOB: {"agent": "a1", "req_id": "r", "computer": "c1", "blob_handle": "blob_x", "chunk_offset": 0},
    events.PUT_BLOB: {
        "agent": "a1",
        "req_id": "r",
        "computer": "c1",
        "chunk_offset": 0,
        "eof": True,
        "blob": "aGk=",
        "total_size": 2,
        "sha256": "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4",
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
