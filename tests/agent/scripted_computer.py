"""A Computer played by a bare `Connection` with scripted answers, for the Agent tests.

Why: the Agent's handling of answers a real Computer gives rarely or never (a wrong
`req_id`, a malformed answer, a call that hangs until cancelled) is pinned down here,
through the real `SMCPServer`. The end-to-end tests use the real Computer.

Tools (answers as a Computer gives them, docs/ARCHITECTURE.md, Wire decisions):
* ``echo`` → text ``json.dumps(params)`` and ``structuredContent`` = params;
* ``fail`` → ``isError`` with ``meta.error_code`` 4003;
* ``hang`` → no answer until the call is cancelled (then ``isError`` with
  ``meta.a2c_cancelled``) or the Computer stops;
* any other name → ``isError`` 4001 (unknown tool).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from smcp_sync.connection.session import Connection, ReconnectPolicy

from smcp_sync.protocol import events
from smcp_sync.protocol.codec import from_wire, to_wire
from smcp_sync.protocol.models import AgentCallData, CallToolResult, SMCPTool, TextContent, ToolCallReq

FAST_RECONNECT = ReconnectPolicy(delay=0.1, delay_max=0.2, randomization=0.05)


def tool(name: str, description: str = "") -> SMCPTool:
    return SMCPTool(
        name=name,
        description=description or f"the {name} tool",
        params_schema={"type": "object", "properties": {}},
        meta={"a2c_tool_meta": json.dumps({"auto_apply": None, "alias": None, "tags": ["test"], "ret_object_mapper": None})},
    )


DEFAULT_TOOLS = (tool("echo"), tool("fail"), tool("hang"))


class ScriptedComputer:
    def __init__(self, name: str = "c1", tools: tuple[SMCPTool, ...] = DEFAULT_TOOLS, auth: dict | None = None):
        self.name = name
        self.tools = tools
        self.desktops: Any = ["window://desk.test/main\n\nhello"]
        self.tools_answer_req_id: str | None = None  # set to answer get_tools with a wrong req_id
        self.cancelled: list[str] = []
        self.received: list[tuple[str, Any]] = []
        self.changed = threading.Condition()
        self._hanging: dict[str, threading.Event] = {}
        self._stopping = threading.Event()
        self.connection = Connection("computer", name, auth=auth, reconnect=FAST_RECONNECT)
        on = self.connection.on
        on(events.GET_TOOLS, self._record(events.GET_TOOLS, self._get_tools))
        on(events.TOOL_CALL, self._record(events.TOOL_CALL, self._tool_call))
        on(events.GET_CONFIG, self._record(events.GET_CONFIG, lambda p: {"servers": {}, "inputs": []}))
        on(events.GET_DESKTOP, self._record(events.GET_DESKTOP, self._get_desktop))
        on(events.CANCEL_TOOL_CALL_NOTIFICATION, self._record(events.CANCEL_TOOL_CALL_NOTIFICATION, self._cancel))

    def start(self, url: str, office_id: str) -> ScriptedComputer:
        self.connection.connect(url, timeout=5)
        self.connection.join_office(office_id, timeout=5)
        return self

    def close(self) -> None:
        with self.changed:
            self._stopping.set()
            for release in self._hanging.values():
                release.set()
        self.connection.close()

    def change_tools(self, tools: tuple[SMCPTool, ...], *, notify: bool = True) -> None:
        self.tools = tools
        if notify:
            self.connection.emit(events.UPDATE_TOOL_LIST, {"computer": self.name})

    def wait_for(self, predicate, timeout: float = 10.0) -> Any:
        with self.changed:
            result = self.changed.wait_for(predicate, timeout)
        assert result, f"computer {self.name} did not see what was expected; received {self.received}"
        return result

    # -- handlers ---------------------------------------------------------------------------

    def _record(self, event: str, handler):
        def record(payload: Any) -> Any:
            with self.changed:
                self.received.append((event, payload))
                self.changed.notify_all()
            return handler(payload)

        return record

    def _get_tools(self, payload: dict) -> dict:
        return {"tools": to_wire(list(self.tools)), "req_id": self.tools_answer_req_id or payload["req_id"]}

    def _get_desktop(self, payload: dict) -> Any:
        return {"desktops": self.desktops, "req_id": payload["req_id"]}

    def _tool_call(self, payload: Any) -> dict:
        request = from_wire(ToolCallReq, payload)
        if request.tool_name == "echo":
            result = CallToolResult(content=[TextContent(text=json.dumps(request.params))], structured_content=request.params)
        elif request.tool_name == "fail":
            result = CallToolResult.failure(4003, "tool 'fail' raised: it always does")
        elif request.tool_name == "hang":
            self._release(request.req_id).wait(30)
            result = CallToolResult.failure(4003, "tool call cancelled", a2c_cancelled=True)
        else:
            result = CallToolResult.failure(4001, f"unknown tool {request.tool_name!r}")
        return to_wire(result)

    def _cancel(self, payload: Any) -> None:
        request = from_wire(AgentCallData, payload)
        with self.changed:
            self.cancelled.append(request.req_id)
            self.changed.notify_all()
        self._release(request.req_id).set()

    def _release(self, req_id: str) -> threading.Event:
        """The event that ends the `hang` call `req_id` (set on cancel or close)."""
        with self.changed:
            release = self._hanging.setdefault(req_id, threading.Event())
            if self._stopping.is_set():
                release.set()
            return release
