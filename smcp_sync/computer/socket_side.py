"""The Computer's side of an office: answers `client:*` events, obeys cancels, and
announces its changes with `server:update_*` (spec/events.md, docs/ARCHITECTURE.md, Wire decisions).

Built on the shared `Connection` (websocket only, re-joins after a reconnect, handler
errors become error objects). Every payload is validated through the models first, so
a bad request gets a 400 naming the field and never reaches the MCP side.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Mapping

from ..blobs import chunk_size, from_reader, read_chunk
from ..blobs.tool_results import spool_oversize
from ..connection.credentials import AuthSource
from ..connection.session import Connection, NotConnectedError, ReconnectPolicy
from ..protocol import events
from ..protocol.codec import from_wire, to_wire
from ..protocol.errors import BadRequestError, NotFoundError, cut_short
from ..protocol.models import (
    AgentCallData,
    CallToolResult,
    CompleteReq,
    CompleteRet,
    GetBlobReq,
    GetComputerConfigReq,
    GetDeskTopReq,
    GetDeskTopRet,
    GetFinderReq,
    GetFinderRet,
    GetResourcesReq,
    GetResourcesRet,
    GetSkillReq,
    GetSkillRet,
    GetSkillsReq,
    GetSkillsRet,
    GetToolsReq,
    GetToolsRet,
    PutBlobReq,
    ReadResourceReq,
    ReadResourceRet,
    ToolCallReq,
    UpdateComputerConfigReq,
)
from ..threads.forks import after_fork_in_child
from ..tracing import ended, handling_span
from .channels.skill_files import inline_body
from .office_requests import OfficeRequests

log = logging.getLogger(__name__)

Handler = Callable[[Any], Any]
#: Answers a deferred request: ``reply(produce)`` (`Connection.on_deferred`).
Reply = Callable[[Callable[[], Any]], None]


class SocketSide:
    def __init__(self, computer: OfficeRequests, reconnect: ReconnectPolicy) -> None:
        self._computer = computer
        self._reconnect = reconnect
        self._connection: Connection | None = None
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {
            events.GET_TOOLS: self._on_get_tools,
            events.GET_CONFIG: self._on_get_config,
            events.GET_DESKTOP: self._on_get_desktop,
            events.GET_FINDER: self._on_get_finder,
            events.READ_RESOURCE: self._on_read_resource,
            events.GET_RESOURCES: self._on_get_resources,
            events.COMPLETE: self._on_complete,
            events.GET_SKILLS: self._on_get_skills,
            events.GET_SKILL: self._on_get_skill,
            events.GET_BLOB: self._on_get_blob,
            events.PUT_BLOB: self._on_put_blob,
            events.CANCEL_TOOL_CALL_NOTIFICATION: self._on_cancel,
        }
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): a fresh lock (the connection forgets its
        session by itself)."""
        self._lock = threading.Lock()

    def connect(
        self, url: str, office_id: str, auth: AuthSource, headers: Mapping[str, str] | None, timeout: float
    ) -> None:
        connection = Connection("computer", self._computer.name, auth=auth, headers=headers, reconnect=self._reconnect)
        for event, handler in self._handlers.items():
            connection.on(event, handler)
        connection.on_deferred(events.TOOL_CALL, self._on_tool_call)
        with self._lock:
            if self._connection is not None:
                raise RuntimeError(f"Computer {self._computer.name!r} is already connected; disconnect() first")
            self._connection = connection
        try:
            connection.connect(url, timeout)
            connection.join_office(office_id, timeout)
        except BaseException:
            self.close()
            raise

    def close(self, on_disconnected: Callable[[], None] | None = None) -> None:
        """Leave the office and close the connection; `on_disconnected` (see
        `Connection.close`) runs in any case, once nothing can answer any more."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close(on_disconnected=on_disconnected)
        elif on_disconnected is not None:
            on_disconnected()

    def announce(self, event: str) -> None:
        """Send `event` (a `server:update_*`) to the office, if in one."""
        connection = self._connection
        if connection is None or connection.office_id is None:
            return
        try:
            connection.emit(event, to_wire(UpdateComputerConfigReq(computer=self._computer.name)))
        except NotConnectedError as exc:  # an agent learns on re-join (notify:enter_office)
            log.info("Computer %r could not announce %s: %s", self._computer.name, event, exc)

    # -- handlers (each on its own Socket.IO thread; a tool call's only starts it) ------

    def _on_tool_call(self, payload: Any, reply: Reply) -> None:
        """Started on the thread reading the socket, answered from the Computer's event
        loop when the call ends (`Connection.on_deferred`): no thread waits for a tool."""
        request = from_wire(ToolCallReq, payload)
        self._check_addressed(request.computer)
        if not request.timeout > 0:
            raise BadRequestError(f"timeout must be positive, got {request.timeout!r} @ $.timeout")
        office_id = self.office_id

        def mint(source: Any, mime_type: str) -> Any:
            return self._computer.blobs.mint(source, office_id=office_id, agent=request.agent, mime_type=mime_type)

        with handling_span("smcp handle client:tool_call", payload, **{"smcp.tool": cut_short(request.tool_name)}) as span:

            def done(result: CallToolResult) -> None:
                ended(span)
                reply(lambda: to_wire(spool_oversize(result, mint)))

            try:  # the call's task starts in this span's context: the mcp SDK's spans are its children
                self._computer.start_tool_call(request.tool_name, request.params, request.timeout, request.req_id, done)
            except BaseException:
                ended(span)
                raise

    def _on_get_tools(self, payload: Any) -> Any:
        request = from_wire(GetToolsReq, payload)
        self._check_addressed(request.computer)
        return to_wire(GetToolsRet(tools=self._computer.tools(), req_id=request.req_id))

    def _on_get_config(self, payload: Any) -> Any:
        request = from_wire(GetComputerConfigReq, payload)
        self._check_addressed(request.computer)
        return to_wire(self._computer.get_config())

    def _on_get_desktop(self, payload: Any) -> Any:
        request = from_wire(GetDeskTopReq, payload)
        self._check_addressed(request.computer)
        desktops = self._computer.desktop(request.desktop_size, request.window)
        return to_wire(GetDeskTopRet(desktops=desktops, req_id=request.req_id))

    def _on_get_finder(self, payload: Any) -> Any:
        request = from_wire(GetFinderReq, payload)
        self._check_addressed(request.computer)
        page = self._computer.finder(request.keywords, request.file_type, request.offset, request.limit)
        return to_wire(GetFinderRet(documents=page.documents, total_count=page.total_count, req_id=request.req_id))

    def _on_read_resource(self, payload: Any) -> Any:
        request = from_wire(ReadResourceReq, payload)
        self._check_addressed(request.computer)
        contents = self._computer.read_resource(request.uri, request.mcp_server)
        return to_wire(ReadResourceRet(contents=contents, req_id=request.req_id))

    def _on_get_resources(self, payload: Any) -> Any:
        request = from_wire(GetResourcesReq, payload)
        self._check_addressed(request.computer)
        resources, next_cursor = self._computer.get_resources(request.mcp_server, request.cursor)
        return to_wire(GetResourcesRet(resources=resources, next_cursor=next_cursor, req_id=request.req_id))

    def _on_complete(self, payload: Any) -> Any:
        request = from_wire(CompleteReq, payload)
        self._check_addressed(request.computer)
        completion = self._computer.complete(request.ref, request.argument, request.context, request.mcp_server)
        return to_wire(CompleteRet(completion=completion, req_id=request.req_id))

    def _on_get_skills(self, payload: Any) -> Any:
        request = from_wire(GetSkillsReq, payload)
        self._check_addressed(request.computer)
        return to_wire(GetSkillsRet(skills=self._computer.skills(), req_id=request.req_id))

    def _on_get_skill(self, payload: Any) -> Any:
        """Text within the inline budget comes as `body`; anything else as a blob handle
        minted for this Agent in this office (the sandbox runs again on each chunk read)."""
        request = from_wire(GetSkillReq, payload)
        self._check_addressed(request.computer)
        resource = self._computer.skill_resource(request.name, request.rel_path)
        body = inline_body(resource, self._computer.skill_inline_budget)
        handle = None
        if body is None:
            source = from_reader(resource.total_size, resource.read, resource.sha256, in_memory=resource.in_memory)
            minted = self._computer.blobs.mint(
                source, office_id=self.office_id, agent=request.agent, mime_type=resource.mime_type
            )
            handle = minted.handle
        return to_wire(
            GetSkillRet(
                name=request.name,
                rel_path=resource.rel_path,
                mime_type=resource.mime_type,
                total_size=resource.total_size,
                sha256=resource.sha256,
                req_id=request.req_id,
                body=body,
                blob_handle=handle,
            )
        )

    def _on_get_blob(self, payload: Any) -> Any:
        request = from_wire(GetBlobReq, payload)
        self._check_addressed(request.computer)
        minted = self._computer.blobs.resolve(request.blob_handle, office_id=self.office_id, agent=request.agent)
        size = chunk_size(request.max_chunk_bytes, self.message_limit)
        return to_wire(read_chunk(minted, request.chunk_offset, size, request.req_id))

    def _on_put_blob(self, payload: Any) -> Any:
        request = from_wire(PutBlobReq, payload)
        self._check_addressed(request.computer)
        return to_wire(self._computer.uploads.receive(request, self.office_id, request.agent))

    @property
    def office_id(self) -> str | None:
        """The office this Computer is in (None when not connected)."""
        connection = self._connection
        return None if connection is None else connection.office_id

    @property
    def message_limit(self) -> int | None:
        """The longest message the Server accepts, if it said (`Connection.max_message_length`)."""
        connection = self._connection
        return None if connection is None else connection.max_message_length

    def _on_cancel(self, payload: Any) -> None:
        request = from_wire(AgentCallData, payload)
        if self._computer.cancel_tool_call(request.req_id):
            log.info("Computer %r cancelled tool call %s for %r", self._computer.name, request.req_id, request.agent)

    def _check_addressed(self, computer: str) -> None:
        if computer != self._computer.name:
            raise NotFoundError(
                f"this is computer {self._computer.name!r}, not {cut_short(repr(computer))}",
                details={"computer": cut_short(computer)},
            )
