"""What an office may ask of a Computer: the members the socket side (`socket_side`)
calls to answer `client:*` events. `Computer` provides them; the socket side knows only
this protocol, so it never imports the class that owns it."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol

from ..blobs import BlobHandles
from ..blobs.uploads import Uploads
from ..protocol.models import (
    DEFAULT_FINDER_LIMIT,
    A2CResource,
    A2CSkillRef,
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    Desktop,
    GetComputerConfigRet,
    ResourceContents,
    SMCPTool,
)
from .channels.finder_catalogue import FinderPage
from .channels.skill_files import SkillResource


class OfficeRequests(Protocol):
    """The Computer as an office sees it."""

    name: str
    #: Blob handles minted for the office's Agents (results, skill files) and their reads.
    blobs: BlobHandles
    #: Blobs the office's Agents upload (`client:put_blob`).
    uploads: Uploads
    #: Most bytes of a skill file's text answered inline.
    skill_inline_budget: int

    def tools(self) -> list[SMCPTool]: ...

    def call_tool(
        self, name: str, params: Mapping[str, Any] | None = ..., timeout: float = ..., *, req_id: str | None = ...
    ) -> CallToolResult: ...

    def start_tool_call(
        self,
        name: str,
        params: Mapping[str, Any] | None,
        timeout: float,
        req_id: str | None,
        done: Callable[[CallToolResult], None],
    ) -> None: ...

    def cancel_tool_call(self, req_id: str) -> bool: ...

    def desktop(self, desktop_size: int | None = ..., window: str | None = ...) -> list[Desktop]: ...

    def finder(
        self,
        keywords: list[str] | None = ...,
        file_type: str | None = ...,
        offset: int = ...,
        limit: int = DEFAULT_FINDER_LIMIT,
    ) -> FinderPage: ...

    def skills(self) -> list[A2CSkillRef]: ...

    def skill_resource(self, name: str, rel_path: str | None = ...) -> SkillResource: ...

    def read_resource(self, uri: str, mcp_server: str | None = ...) -> list[ResourceContents]: ...

    def get_resources(self, mcp_server: str, cursor: str | None = ...) -> tuple[list[A2CResource], str | None]: ...

    def complete(
        self,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None = ...,
        mcp_server: str | None = ...,
    ) -> Completion: ...

    def get_config(self) -> GetComputerConfigRet: ...
