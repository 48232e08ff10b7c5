"""The same tool behaviour over stdio, SSE and streamable HTTP: list, call, error result,
timeout, cancel mid-call (the MCP server sees the cancellation)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer, ServerState, allow_all
from smcp_sync.protocol import A2C_TOOL_META, MCP_TOOL_ANNOTATION, BadRequestError, CallToolResult, ErrorCode

from ..helpers import FAST, CallLogs, http_config, stdio_config

pytestmark = pytest.mark.timeout(60)

TRANSPORTS = ["stdio", "sse", "streamable"]
BUILTIN_TOOLS = ["echo", "add", "fail", "sleep", "crash", "add_tool", "remove_tool", "big", "image", "delete_item", "meta_tool"]


@pytest.fixture(scope="module")
def computers(http_servers: dict[str, str], call_logs: CallLogs) -> Iterator[dict[str, Computer]]:
    """One Computer per transport, shared by the module's tests (none of them breaks it)."""
    configs = {
        "stdio": stdio_config("tools", env=call_logs.env),
        **{transport: http_config("tools", transport, url) for transport, url in http_servers.items()},
    }
    started: dict[str, Computer] = {}
    try:
        for transport, config in configs.items():
            started[transport] = Computer(f"c-{transport}", [config], policy=FAST, confirm=allow_all).start()
        yield started
    finally:
        for computer in started.values():
            computer.close()


@pytest.fixture(params=TRANSPORTS)
def computer(request: Any, computers: dict[str, Computer], no_leaks: None) -> Computer:
    return computers[request.param]


def test_lists_the_servers_tools_as_smcp_tools(computer: Computer) -> None:
    status = computer.servers.statuses()[0]
    assert status.state is ServerState.RUNNING and status.capabilities.tools_list_changed
    tools = {tool.name.removeprefix("tools__"): tool for tool in computer.tools()}
    assert [tool.name for tool in computer.tools()] == [f"tools__{name}" for name in BUILTIN_TOOLS]  # the server's order
    assert {tool.bundle_id for tool in computer.tools()} == {"tools"}
    echo = tools["echo"]
    assert echo.description == "Return the text unchanged."
    assert echo.params_schema["properties"] == {"text": {"type": "string"}}
    assert echo.return_schema == {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    assert echo.meta == {} and tools["add"].return_schema is None
    annotation = json.loads(tools["delete_item"].meta[MCP_TOOL_ANNOTATION])
    assert annotation == {
        "title": "Delete item", "readOnlyHint": False, "destructiveHint": True,
        "idempotentHint": False, "openWorldHint": False,
    }
    # the server's own _meta keys are kept, apart from the A2C namespace
    assert tools["meta_tool"].meta == {"example.com/origin": "tool_server", "tags": "server-native"}
    assert A2C_TOOL_META not in tools["meta_tool"].meta


def test_calls_relay_results_and_tool_errors_as_is(computer: Computer) -> None:
    echo = computer.call_tool("echo", {"text": "héllo"}, timeout=10)
    assert (echo.is_error, echo.text, echo.structured_content, echo.error_code) == (False, "héllo", {"result": "héllo"}, None)
    assert computer.call_tool("add", {"a": 2, "b": 40}, timeout=10).text == "42"
    failed = computer.call_tool("fail", {"message": "it broke"}, timeout=10)
    assert failed.is_error and failed.text == "it broke"
    assert failed.error_code is None  # the tool's own error, relayed as is
    big = computer.call_tool("big", {"size": 300_000}, timeout=10)
    assert len(big.text) == 300_000


def test_an_mcp_refusal_is_a_400_that_keeps_its_json_rpc_code(computer: Computer) -> None:
    with pytest.raises(BadRequestError) as caught:
        computer._manager.request("tools", lambda session: session.call_tool("no_such_tool", {}), 10, "tools/call")
    assert caught.value.code == 400 and caught.value.details["mcp_code"] == -32602  # INVALID_PARAMS
    assert "Unknown tool: no_such_tool" in caught.value.message
    assert caught.value.details["mcp_server"] == "tools"


def test_a_timeout_answers_4004_within_the_timeout_and_cancels_the_mcp_request(
    computer: Computer, call_logs: CallLogs
) -> None:
    seconds = 30.0 + TRANSPORTS.index(_transport(computer)) / 10
    started = time.monotonic()
    result = computer.call_tool("sleep", {"seconds": seconds}, timeout=0.5)
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 2.0
    assert result.is_error and result.error_code == ErrorCode.TOOL_TIMEOUT
    assert result.meta == {"error_code": 4004, "timeout": True, "a2c_timeout": True}
    assert "timed out after 0.5s" in result.text
    call_logs.wait_cancelled(seconds)


def test_cancel_by_req_id_stops_the_call_mid_flight(computer: Computer, call_logs: CallLogs) -> None:
    seconds = 40.0 + TRANSPORTS.index(_transport(computer)) / 10
    results: list[CallToolResult] = []
    caller = threading.Thread(
        target=lambda: results.append(computer.call_tool("sleep", {"seconds": seconds}, timeout=30, req_id="req-42"))
    )
    caller.start()
    call_logs.wait_started(seconds)
    started = time.monotonic()
    assert computer.cancel_tool_call("req-42") is True
    caller.join(10)
    assert time.monotonic() - started < 2.0
    [result] = results
    assert result.is_error and result.meta == {"error_code": 4003, "a2c_cancelled": True}
    call_logs.wait_cancelled(seconds)
    # the session survives a cancelled call
    assert computer.call_tool("echo", {"text": "still here"}, timeout=10).text == "still here"
    assert computer.cancel_tool_call(f"finished-{seconds}") is False  # nothing in flight under that id


def _transport(computer: Computer) -> str:
    return computer._manager.snapshot()[0][0].type
