"""Desktop structures (spec/desktop.md): a desktop is a list of rendered window strings."""

from __future__ import annotations

from ._fields import wire_model

#: One rendered window: ``"{window:// URI}\n\n{body}"`` or just the URI.
Desktop = str


@wire_model
class GetDeskTopReq:
    agent: str
    req_id: str
    computer: str
    desktop_size: int | None = None
    window: str | None = None


@wire_model
class GetDeskTopRet:
    desktops: list[Desktop]
    req_id: str
