"""The tool list: exposed names ``{bundle_id}__{alias or tool}``, bare names, forbidden
tools, tool meta, alias clashes — as rules (pure) and end to end with two real MCP
servers that offer the same tool names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smcp_sync.computer import ServerState, ServerStatus, ServerTool
from smcp_sync.computer.tools.catalog import build_catalog
from smcp_sync.protocol import A2C_TOOL_META, MCP_TOOL_ANNOTATION, ErrorCode, MCPServerConfig, from_wire

from ..helpers import stdio_config

pytestmark = pytest.mark.timeout(60)


def config(name: str, **fields: Any) -> MCPServerConfig:
    return from_wire(
        MCPServerConfig, {"name": name, "bundle_id": name, "type": "stdio", "server_parameters": {"command": "x"}, **fields}
    )


def status(name: str, *tools: str, state: ServerState = ServerState.RUNNING) -> ServerStatus:
    listed = tuple(ServerTool(name=t, input_schema={"type": "object"}) for t in tools)
    return ServerStatus(name=name, bundle_id=name, state=state, tools=listed)


def test_alias_renames_the_tool_part_and_routes_to_the_original_name() -> None:
    catalog = build_catalog([(config("a", tool_meta={"echo": {"alias": "say"}}), status("a", "echo", "add"))])
    assert [(t.name, t.bundle_id) for t in catalog.tools] == [("a__say", "a"), ("a__add", "a")]
    route = catalog.routes["a__say"]
    assert (route.server, route.tool, route.exposed) == ("a", "echo", "a__say")
    assert set(catalog.routes) == {"a__say", "a__add"}


def test_a_bare_name_resolves_when_one_exposed_tool_has_it_and_lists_candidates_otherwise() -> None:
    catalog = build_catalog(
        [(config("a", tool_meta={"echo": {"alias": "say"}}), status("a", "echo", "add")), (config("b"), status("b", "add"))]
    )
    assert catalog.resolve("a__say") == "a__say"
    assert catalog.resolve("say") == "a__say"
    assert catalog.resolve("echo") == ()  # the bare name of an aliased tool is its alias
    assert catalog.resolve("add") == ("a__add", "b__add")
    assert catalog.resolve("nothing") == () and catalog.resolve("c__add") == ()


def test_forbidden_tools_are_hidden_by_original_alias_or_exposed_name() -> None:
    catalog = build_catalog(
        [(
            config("a", forbidden_tools=["add", "say", "a__big"], tool_meta={"echo": {"alias": "say"}}),
            status("a", "echo", "add", "big", "small"),
        )]
    )
    assert [t.name for t in catalog.tools] == ["a__small"]
    assert catalog.forbidden == {"a__say": "a", "a__add": "a", "a__big": "a"}
    assert catalog.resolve("say") == "a__say"  # a bare forbidden name finds its tool: calling it is 4002


def test_a2c_tool_meta_is_the_merged_meta_as_a_json_string() -> None:
    catalog = build_catalog([
        (
            config("a", default_tool_meta={"tags": ["fs"], "auto_apply": False}, tool_meta={"echo": {"auto_apply": True}}),
            status("a", "echo", "add"),
        ),
        (config("b"), status("b", "big")),
    ])
    metas = {t.name.split("__")[1]: t.meta for t in catalog.tools}
    every_key = {"alias": None, "tags": ["fs"], "ret_object_mapper": None}  # nulls included, as the spec shows
    assert json.loads(metas["echo"][A2C_TOOL_META]) == {"auto_apply": True, **every_key}
    assert json.loads(metas["add"][A2C_TOOL_META]) == {"auto_apply": False, **every_key}
    assert metas["big"] == {}  # nothing configured: no a2c_tool_meta (spec scenario 1)
    assert catalog.routes["a__echo"].auto_apply and not catalog.routes["a__add"].auto_apply


def test_server_meta_values_that_are_not_simple_attributes_become_json_text() -> None:
    tool = ServerTool(
        name="t", input_schema={}, meta={"s": "x", "n": 1, "tags": ["a"], "obj": {"k": [1, 2]}},
        annotations={"readOnlyHint": True},
    )
    catalog = build_catalog([(config("a"), ServerStatus(name="a", bundle_id="a", state=ServerState.RUNNING, tools=(tool,)))])
    assert catalog.tools[0].meta == {
        "s": "x", "n": 1, "tags": ["a"], "obj": '{"k": [1, 2]}', MCP_TOOL_ANNOTATION: '{"readOnlyHint": true}',
    }


def test_servers_with_the_same_tool_names_never_clash() -> None:
    catalog = build_catalog([(config("a"), status("a", "echo", "add")), (config("b"), status("b", "echo", "big"))])
    assert [t.name for t in catalog.tools] == ["a__echo", "a__add", "b__echo", "b__big"]
    assert not catalog.diagnostics


def test_two_tools_of_one_server_aliased_to_one_name_keep_the_first_and_report_the_other() -> None:
    catalog = build_catalog([(config("a", tool_meta={"add": {"alias": "echo"}}), status("a", "echo", "add"))])
    assert [t.name for t in catalog.tools] == ["a__echo"] and catalog.routes["a__echo"].tool == "echo"
    [diagnostic] = catalog.diagnostics
    assert "'a__echo' of MCP server 'a' is hidden" in diagnostic and "tool_meta.add.alias on 'a'" in diagnostic


def test_a_restarting_server_keeps_its_names_and_its_tools_are_unavailable() -> None:
    catalog = build_catalog(
        [(config("a"), status("a", "echo", state=ServerState.RESTARTING)), (config("b"), status("b", "echo", "big"))]
    )
    assert [t.name for t in catalog.tools] == ["b__echo", "b__big"]
    assert catalog.unavailable == {"a__echo": "a"}
    assert catalog.resolve("echo") == ("a__echo", "b__echo")  # a bare name stays ambiguous meanwhile
    assert any("'a' is restarting" in d for d in catalog.diagnostics)


def test_stopped_and_disabled_servers_claim_nothing() -> None:
    catalog = build_catalog(
        [(config("a"), status("a", "echo", state=ServerState.STOPPED)), (config("b"), status("b", "echo"))]
    )
    assert catalog.resolve("echo") == "b__echo" and not catalog.diagnostics


def test_two_real_servers_with_the_same_tools(computer_factory: Any) -> None:
    computer = computer_factory(
        stdio_config("first", forbidden_tools=["crash"], tool_meta={"add": {"auto_apply": True, "tags": ["math"]}}),
        stdio_config("second", tool_meta={"echo": {"alias": "echo2"}}),
    )
    names = [tool.name for tool in computer.tools()]
    assert "first__echo" in names and "second__echo2" in names and "second__echo" not in names
    assert "first__crash" not in names and "second__crash" in names
    assert {tool.bundle_id for tool in computer.tools()} == {"first", "second"}
    # exposed names route to their server; a bare name only when one exposed tool has it
    assert computer.call_tool("first__echo", {"text": "one"}, timeout=10).text == "one"
    assert computer.call_tool("echo2", {"text": "two"}, timeout=10).text == "two"
    assert computer.call_tool("echo", {"text": "three"}, timeout=10).text == "three"  # second's is echo2
    assert [r.server for r in computer.tool_call_history()] == ["first", "second", "first"]
    assert [r.tool for r in computer.tool_call_history()] == ["first__echo", "second__echo2", "first__echo"]
    ambiguous = computer.call_tool("add", {"a": 1, "b": 1}, timeout=10)
    assert ambiguous.is_error and ambiguous.error_code == ErrorCode.TOOL_NOT_FOUND
    assert ambiguous.meta["candidates"] == ["first__add", "second__add"]
    assert "'first__add', 'second__add'" in ambiguous.text
    assert computer.call_tool("second__add", {"a": 1, "b": 1}, timeout=10).text == "2"
    add = next(t for t in computer.tools() if t.name == "first__add")
    assert json.loads(add.meta[A2C_TOOL_META])["tags"] == ["math"]
    assert not [d for d in computer.diagnostics() if "tool name clash" in d]


def test_calling_a_forbidden_tool_is_4002(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("only", forbidden_tools=["crash", "sleep"]))
    for name in ("crash", "only__crash"):
        result = computer.call_tool(name, {}, timeout=10)
        assert result.is_error and result.error_code == ErrorCode.TOOL_DISABLED
        assert result.text == "tool 'only__crash' is forbidden by the configuration of MCP server 'only'"
    assert computer.servers.statuses()[0].state is ServerState.RUNNING  # it never reached the server
