"""The tool list: aliases, forbidden tools, tool meta, name clashes — as rules (pure) and
end to end with two real MCP servers that offer the same tool names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smcp_sync.computer import ServerState, ServerStatus, ServerTool
from smcp_sync.computer.catalog import build_catalog
from smcp_sync.protocol import A2C_TOOL_META, MCP_TOOL_ANNOTATION, ErrorCode, MCPServerConfig, from_wire

from .helpers import stdio_config

pytestmark = pytest.mark.timeout(60)


def config(name: str, **fields: Any) -> MCPServerConfig:
    return from_wire(MCPServerConfig, {"name": name, "type": "stdio", "server_parameters": {"command": "x"}, **fields})


def status(name: str, *tools: str, state: ServerState = ServerState.RUNNING) -> ServerStatus:
    return ServerStatus(name=name, state=state, tools=tuple(ServerTool(name=t, input_schema={"type": "object"}) for t in tools))


def test_alias_renames_and_routes_to_the_original_name() -> None:
    catalog = build_catalog([(config("a", tool_meta={"echo": {"alias": "say"}}), status("a", "echo", "add"))])
    assert [t.name for t in catalog.tools] == ["say", "add"]
    route = catalog.routes["say"]
    assert (route.server, route.tool, route.exposed) == ("a", "echo", "say")
    assert "echo" not in catalog.routes


def test_forbidden_tools_are_hidden_by_original_or_exposed_name() -> None:
    catalog = build_catalog(
        [(config("a", forbidden_tools=["add", "say"], tool_meta={"echo": {"alias": "say"}}), status("a", "echo", "add", "big"))]
    )
    assert [t.name for t in catalog.tools] == ["big"]
    assert catalog.forbidden == {"say": "a", "echo": "a", "add": "a"}


def test_a2c_tool_meta_is_the_merged_meta_as_a_json_string() -> None:
    catalog = build_catalog([
        (
            config("a", default_tool_meta={"tags": ["fs"], "auto_apply": False}, tool_meta={"echo": {"auto_apply": True}}),
            status("a", "echo", "add"),
        ),
        (config("b"), status("b", "big")),
    ])
    metas = {t.name: t.meta for t in catalog.tools}
    every_key = {"alias": None, "tags": ["fs"], "ret_object_mapper": None}  # nulls included, as the spec shows
    assert json.loads(metas["echo"][A2C_TOOL_META]) == {"auto_apply": True, **every_key}
    assert json.loads(metas["add"][A2C_TOOL_META]) == {"auto_apply": False, **every_key}
    assert metas["big"] == {}  # nothing configured: no a2c_tool_meta (spec scenario 1)
    assert catalog.routes["echo"].auto_apply and not catalog.routes["add"].auto_apply


def test_server_meta_values_that_are_not_simple_attributes_become_json_text() -> None:
    tool = ServerTool(
        name="t", input_schema={}, meta={"s": "x", "n": 1, "tags": ["a"], "obj": {"k": [1, 2]}},
        annotations={"readOnlyHint": True},
    )
    catalog = build_catalog([(config("a"), ServerStatus(name="a", state=ServerState.RUNNING, tools=(tool,)))])
    assert catalog.tools[0].meta == {
        "s": "x", "n": 1, "tags": ["a"], "obj": '{"k": [1, 2]}', MCP_TOOL_ANNOTATION: '{"readOnlyHint": true}',
    }


def test_a_clash_keeps_the_first_server_in_configuration_order_and_reports_the_other() -> None:
    servers = [(config("a"), status("a", "echo", "add")), (config("b"), status("b", "echo", "big"))]
    catalog = build_catalog(servers)
    assert [t.name for t in catalog.tools] == ["echo", "add", "big"]
    assert catalog.routes["echo"].server == "a"
    [diagnostic] = catalog.diagnostics
    assert "'echo' of MCP server 'b' is hidden" in diagnostic and "tool_meta.echo.alias on 'b'" in diagnostic
    # the order of the servers decides, not the order their tools arrived in
    assert build_catalog(servers[::-1]).routes["echo"].server == "b"


def test_a_restarting_server_keeps_its_names_and_its_tools_are_unavailable() -> None:
    catalog = build_catalog(
        [(config("a"), status("a", "echo", state=ServerState.RESTARTING)), (config("b"), status("b", "echo", "big"))]
    )
    assert [t.name for t in catalog.tools] == ["big"]  # b's echo does not take a's name meanwhile
    assert catalog.unavailable == {"echo": "a"}
    assert any("'a' is restarting" in d for d in catalog.diagnostics)


def test_stopped_and_disabled_servers_claim_nothing() -> None:
    catalog = build_catalog(
        [(config("a"), status("a", "echo", state=ServerState.STOPPED)), (config("b"), status("b", "echo"))]
    )
    assert catalog.routes["echo"].server == "b" and not catalog.diagnostics


def test_two_real_servers_with_the_same_tools(computer_factory: Any) -> None:
    computer = computer_factory(
        stdio_config("first", forbidden_tools=["crash"], tool_meta={"add": {"auto_apply": True, "tags": ["math"]}}),
        stdio_config("second", tool_meta={"echo": {"alias": "echo2"}}),
    )
    names = [tool.name for tool in computer.tools()]
    assert names.count("echo") == 1 and "echo2" in names
    # first forbids crash, so first claims no such name: second's crash is exposed
    assert names.count("crash") == 1
    # echo is first's, echo2 is second's echo: both work
    assert computer.call_tool("echo", {"text": "one"}, timeout=10).text == "one"
    assert computer.call_tool("echo2", {"text": "two"}, timeout=10).text == "two"
    assert [r.server for r in computer.tool_call_history()] == ["first", "second"]
    assert computer.call_tool("add", {"a": 1, "b": 1}, timeout=10).text == "2"
    add = next(t for t in computer.tools() if t.name == "add")
    assert json.loads(add.meta[A2C_TOOL_META])["tags"] == ["math"]
    diagnostics = computer.get_config().diagnostics
    hidden = {d.split("'")[1] for d in diagnostics if "tool name clash" in d}
    assert hidden == {"add", "fail", "sleep", "add_tool", "remove_tool", "big", "delete_item", "meta_tool"}
    assert computer.call_tool("fail", {"message": "m"}, timeout=10).text == "m"  # first's, unharmed


def test_calling_a_forbidden_tool_is_4002(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("only", forbidden_tools=["crash", "sleep"]))
    result = computer.call_tool("crash", {}, timeout=10)
    assert result.is_error and result.error_code == ErrorCode.TOOL_DISABLED
    assert result.text == "tool 'crash' is forbidden by the configuration of MCP server 'only'"
    assert computer.server_statuses()[0].state is ServerState.RUNNING  # it never reached the server
