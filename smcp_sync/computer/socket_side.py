"""The Computer's side of an office: answers `client:*` events, obeys cancels, and
announces its changes with `server:update_*` (spec/events.md, DESIGN §3).

Built on the shared `Connection` (websocket only, re-joins after a reconnect, handler
errors become error objects). Every payload is validated through the models first, so
a bad request gets a 400 naming the field and never reaches the MCP side.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..connection import Connection, NotConnectedError, ReconnectPolicy
from ..protocol import events
from ..protocol.codec import from_wire, to_wire
from ..protocol.errors import BadRequestError, NotFoundError
from ..protocol.models import (
    AgentCallData,
    GetComputerConfigReq,
    GetToolsReq,
    GetToolsRet,
    ToolCallReq,
    UpdateComputerConfigReq,
)

if TYPE_CHECKING:
    from .computer import Computer

log = logging.getLogger(__name__)

Handler = Callable[[Any], Any]


class SocketSide:
    def __init__(self, computer: Computer, reconnect: ReconnectPolicy) -> None:
        self._computer = computer
        self._reconnect = reconnect
        self._connection: Connection | None = None
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {
            events.TOOL_CALL: self._on_tool_call,
            events.GET_TOOLS: self._on_get_tools,
            events.GET_CONFIG: self._on_get_config,
            events.CANCEL_TOOL_CALL_NOTIFICATION: self._on_cancel,
        }

    def connect(self, url: str, office_id: str, auth: Mapping[str, Any] | None, timeout: float) -> None:
        connection = Connection("computer", self._computer.name, auth=auth, reconnect=self._reconnect)
        for event, handler in self._handlers.items():
            connection.on(event, handler)
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

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def announce_tools(self) -> None:
        self._announce(events.UPDATE_TOOL_LIST)

    def announce_config(self) -> None:
        self._announce(events.UPDATE_CONFIG)

    def _announce(self, event: str) -> None:
        connection = self._connection
        if connection is None or connection.office_id is None:
            return
        try:
            connection.emit(event, to_wire(UpdateComputerConfigReq(computer=self._computer.name)))
        except NotConnectedError as exc:  # an agent learns on re-join (notify:enter_office)
            log.info("Computer %r could not announce %s: %s", self._computer.name, event, exc)

    # -- handlers (each on its own Socket.IO thread) ------------------------------------

    def _on_tool_call(self, payload: Any) -> Any:
        request = from_wire(ToolCallReq, payload)
        self._check_addressed(request.computer)
        if not request.timeout > 0:
            raise BadRequestError(f"timeout must be positive, got {request.timeout!r} @ $.timeout")
        result = self._computer.call_tool(request.tool_name, request.params, request.timeout, req_id=request.req_id)
        return to_wire(result)

    def _on_get_tools(self, payload: Any) -> Any:
        request = from_wire(GetToolsReq, payload)
        self._check_addressed(request.computer)
        return to_wire(GetToolsRet(tools=self._computer.tools(), req_id=request.req_id))

    def _on_get_config(self, payload: Any) -> Any:
        request = from_wire(GetComputerConfigReq, payload)
        self._check_addressed(request.computer)
        return to_wire(self._computer.get_config())

    def _on_cancel(self, payload: Any) -> None:
        request = from_wire(AgentCallData, payload)
        if self._computer.cancel_tool_call(request.req_id):
            log.info("Computer %r cancelled tool call %s for %r", self._computer.name, request.req_id, request.agent)

    def _check_addressed(self, computer: str) -> None:
        if computer != self._computer.name:
            raise NotFoundError(
                f"this is computer {self._computer.name!r}, not {computer!r}", details={"computer": computer}
            )
