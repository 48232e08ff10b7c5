"""Office (room) structures: join/leave, membership notifications, list_room."""

from __future__ import annotations

from typing import Literal

from ._fields import wire_model

Role = Literal["computer", "agent"]


@wire_model
class AgentCallData:
    """Base of every Agent request; also the payload of `server:tool_call_cancel`."""

    agent: str
    req_id: str


@wire_model
class EnterOfficeReq:
    role: Role
    name: str
    office_id: str


@wire_model
class LeaveOfficeReq:
    office_id: str


@wire_model
class EnterOfficeNotification:
    """Exactly one of `computer` / `agent` is set."""

    office_id: str
    computer: str | None = None
    agent: str | None = None


@wire_model
class LeaveOfficeNotification:
    office_id: str
    computer: str | None = None
    agent: str | None = None


@wire_model
class ListRoomReq:
    agent: str
    req_id: str
    office_id: str


@wire_model
class SessionInfo:
    """`a2c_version`: what the session declared when it connected (as a2c-smcp 0.4.2's
    SessionInfo); absent for clients that declared none (official 0.1.x SDKs)."""

    sid: str
    name: str
    role: Role
    office_id: str
    a2c_version: str | None = None


@wire_model
class ListRoomRet:
    sessions: list[SessionInfo]
    req_id: str


@wire_model
class UpdateComputerConfigReq:
    """`{computer}` — shared by server:/notify: update_config, update_tool_list,
    update_desktop and update_finder."""

    computer: str


UpdateMCPConfigNotification = UpdateComputerConfigReq
UpdateToolListNotification = UpdateComputerConfigReq
