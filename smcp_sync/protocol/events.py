"""Socket.IO namespace and event names of A2C-SMCP (spec/events.md) plus our extensions.

Names are kept exactly as on the wire; the groups below let the Server decide how to
treat an event (route to a Computer, handle itself, or broadcast) without string parsing.
"""

NAMESPACE = "/smcp"

# client:* — Agent -> Server -> Computer (routed by the `computer` field)
TOOL_CALL = "client:tool_call"
GET_CONFIG = "client:get_config"
GET_TOOLS = "client:get_tools"
GET_DESKTOP = "client:get_desktop"
GET_FINDER = "client:get_finder"
# Extension events (docs/ARCHITECTURE.md, Wire decisions): the spec needs them but defines no event.
READ_RESOURCE = "client:read_resource"
GET_RESOURCES = "client:get_resources"
COMPLETE = "client:complete"
# Blob transfer (spec-0.3/blob-transfer.md; put_blob from a2c-smcp 0.4.2)
GET_BLOB = "client:get_blob"
PUT_BLOB = "client:put_blob"
# SKILL channel (spec-0.3/skill.md, protocol 0.2.1+)
GET_SKILLS = "client:get_skills"
GET_SKILL = "client:get_skill"

# server:* — handled by the Server itself
JOIN_OFFICE = "server:join_office"
LEAVE_OFFICE = "server:leave_office"
UPDATE_CONFIG = "server:update_config"
UPDATE_TOOL_LIST = "server:update_tool_list"
UPDATE_DESKTOP = "server:update_desktop"
UPDATE_FINDER = "server:update_finder"
UPDATE_SKILLS = "server:update_skills"
CANCEL_TOOL_CALL = "server:tool_call_cancel"
LIST_ROOM = "server:list_room"

# notify:* — broadcast by the Server to one office
ENTER_OFFICE_NOTIFICATION = "notify:enter_office"
LEAVE_OFFICE_NOTIFICATION = "notify:leave_office"
UPDATE_CONFIG_NOTIFICATION = "notify:update_config"
UPDATE_TOOL_LIST_NOTIFICATION = "notify:update_tool_list"
UPDATE_DESKTOP_NOTIFICATION = "notify:update_desktop"
UPDATE_FINDER_NOTIFICATION = "notify:update_finder"
UPDATE_SKILLS_NOTIFICATION = "notify:update_skills"
CANCEL_TOOL_CALL_NOTIFICATION = "notify:tool_call_cancel"

CLIENT_EVENTS = frozenset(
    {
        TOOL_CALL,
        GET_CONFIG,
        GET_TOOLS,
        GET_DESKTOP,
        GET_FINDER,
        READ_RESOURCE,
        GET_RESOURCES,
        COMPLETE,
        GET_BLOB,
        PUT_BLOB,
        GET_SKILLS,
        GET_SKILL,
    }
)
SERVER_EVENTS = frozenset(
    {
        JOIN_OFFICE,
        LEAVE_OFFICE,
        UPDATE_CONFIG,
        UPDATE_TOOL_LIST,
        UPDATE_DESKTOP,
        UPDATE_FINDER,
        UPDATE_SKILLS,
        CANCEL_TOOL_CALL,
        LIST_ROOM,
    }
)
NOTIFY_EVENTS = frozenset(
    {
        ENTER_OFFICE_NOTIFICATION,
        LEAVE_OFFICE_NOTIFICATION,
        UPDATE_CONFIG_NOTIFICATION,
        UPDATE_TOOL_LIST_NOTIFICATION,
        UPDATE_DESKTOP_NOTIFICATION,
        UPDATE_FINDER_NOTIFICATION,
        UPDATE_SKILLS_NOTIFICATION,
        CANCEL_TOOL_CALL_NOTIFICATION,
    }
)

#: Names Socket.IO or python-socketio give a meaning of their own (lifecycle handlers,
#: the catch-all, `send()`): a peer sending an *event* by one of these names must be
#: refused, or it would run e.g. the disconnect handler while its socket stays open.
RESERVED_EVENT_NAMES = frozenset({"connect", "connect_error", "disconnect", "__disconnect_final", "message", "*"})

#: A Computer's `server:update_*` event and the notification the Server fans out for it.
UPDATE_TO_NOTIFICATION = {
    UPDATE_CONFIG: UPDATE_CONFIG_NOTIFICATION,
    UPDATE_TOOL_LIST: UPDATE_TOOL_LIST_NOTIFICATION,
    UPDATE_DESKTOP: UPDATE_DESKTOP_NOTIFICATION,
    UPDATE_FINDER: UPDATE_FINDER_NOTIFICATION,
    UPDATE_SKILLS: UPDATE_SKILLS_NOTIFICATION,
}
