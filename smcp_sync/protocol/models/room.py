"""Office (room) structures: join/leave, membership notifications, list_room."""

from __future__ import annotations

from typing import Any, Literal

from ..codec import converter
from ._display import html_table, markdown_table, named
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


class SessionList(list[SessionInfo]):
    """`Agent.list_room`'s answer: a list of `SessionInfo`, shown as a table."""

    def __repr__(self) -> str:
        return f"SessionList({len(self)} sessions: {named(f'{s.role} {s.name}' for s in self)})"

    def _rows(self) -> list[tuple[Any, ...]]:
        return [(s.role, s.name, s.sid, s.a2c_version) for s in self]

    def _repr_html_(self) -> str:
        return html_table(("role", "name", "sid", "a2c_version"), self._rows(), f"{len(self)} sessions")

    def _repr_markdown_(self) -> str:
        return markdown_table(("role", "name", "sid", "a2c_version"), self._rows(), f"{len(self)} sessions")


# A list on the wire.
converter.register_unstructure_hook(SessionList, lambda value: [converter.unstructure(v) for v in value])
