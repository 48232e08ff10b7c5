"""Configuration documents in the official Python SDK's JSON format, loaded unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smcp_sync.computer import Computer, ConfigError, load_config, load_inputs
from smcp_sync.protocol import (
    PromptStringInput,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
    to_wire,
)
from smcp_sync.computer import Inputs

from ..helpers import stdio_config

pytestmark = pytest.mark.timeout(20)

# As the official SDK's docs write them (defaults omitted, ISO durations for streamable).
STDIO = {
    "name": "files",
    "type": "stdio",
    "disabled": False,
    "forbidden_tools": ["rm"],
    "tool_meta": {"read": {"auto_apply": True, "alias": "read_file"}},
    "server_parameters": {"command": "mcp-files", "args": ["--root", "${input:root}"], "env": {"TOKEN": "${input:token}"}},
}
SSE = {"name": "remote", "type": "sse", "server_parameters": {"url": "http://127.0.0.1:1/sse", "timeout": 5}}
STREAMABLE = {
    "name": "stream",
    "type": "streamable",
    "server_parameters": {"url": "http://127.0.0.1:1/mcp", "timeout": "PT30S", "sse_read_timeout": "PT5M"},
}
INPUTS = [
    {"type": "promptString", "id": "token", "description": "Token", "password": True},
    {"type": "promptString", "id": "root", "description": "Root", "default": "/srv"},
]


def test_one_server_object() -> None:
    assert load_config(STDIO).servers == (STDIO,)


def test_a_list_of_servers_keeps_its_order(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps([STDIO, SSE, STREAMABLE]))
    assert [s["name"] for s in load_config(str(path)).servers] == ["files", "remote", "stream"]
    assert load_config(f"@{path}").servers == load_config(path).servers  # the official "@file" form


def test_servers_and_inputs_in_one_document() -> None:
    loaded = load_config({"servers": [STDIO], "inputs": INPUTS})
    assert loaded.servers == (STDIO,)
    assert loaded.inputs[0] == PromptStringInput(id="token", description="Token", password=True)


def test_servers_as_a_mapping_take_their_name_from_the_key() -> None:
    loaded = load_config({"servers": {"remote": {k: v for k, v in SSE.items() if k != "name"}}})
    assert loaded.servers == ({"name": "remote", "type": "sse", "server_parameters": SSE["server_parameters"]},)


def test_inputs_file_holds_one_input_or_a_list(tmp_path: Path) -> None:
    path = tmp_path / "inputs.json"
    path.write_text(json.dumps(INPUTS))
    assert [i.id for i in load_inputs(path)] == ["token", "root"]
    assert [i.id for i in load_inputs(INPUTS[1])] == ["root"]


def test_the_computer_renders_and_types_every_server_config() -> None:
    computer = Computer("c", config={"servers": [STDIO, SSE, STREAMABLE], "inputs": INPUTS}, inputs=Inputs(values={"token": "t"}))
    configs = {config.name: config for config, _ in computer._manager.snapshot()}
    files = configs["files"]
    assert isinstance(files, StdioServerConfig)
    assert files.server_parameters.args == ["--root", "/srv"] and files.server_parameters.env == {"TOKEN": "t"}
    assert files.tool_meta["read"].alias == "read_file" and files.forbidden_tools == ["rm"]
    assert isinstance(configs["remote"], SseServerConfig) and configs["remote"].server_parameters.timeout == 5.0
    stream = configs["stream"]
    assert isinstance(stream, StreamableHttpServerConfig)
    assert (stream.server_parameters.timeout, stream.server_parameters.sse_read_timeout) == (30.0, 300.0)
    computer.close()  # never started: nothing to stop


@pytest.mark.parametrize(
    "document, message",
    [
        ([STDIO, STDIO], "MCP servers 'files' and 'files' both have bundle_id 'files'; give one of them another"),
        ([STDIO, {**SSE, "name": "files!"}], "MCP servers 'files' and 'files!' both have bundle_id 'files'"),
        ([{**SSE, "bundle_id": "a.b"}], "MCP server 'remote': bundle_id may only use the characters A-Z a-z 0-9 _ -"),
        ([{**SSE, "bundle_id": "a__b"}], "MCP server 'remote': bundle_id must not contain '__'"),
        ([42], "servers[0] must be a JSON object, got int"),
    ],
)
def test_unusable_documents_are_refused_with_the_reason(document: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(document)
    assert message in caught.value.message and caught.value.code == 400


def test_servers_may_share_a_display_name_when_their_bundle_ids_differ() -> None:
    computer = Computer("c", [{**STDIO, "bundle_id": "files_a"}, {**STDIO, "bundle_id": "files_b"}], inputs=Inputs(values={"root": "/", "token": "t"}))
    assert list(computer.get_config().servers) == ["files_a", "files_b"]
    assert [s.name for s in computer.get_config().servers.values()] == ["files", "files"]
    computer.close()


def test_get_config_keys_servers_by_bundle_id_and_each_entry_carries_it() -> None:
    computer = Computer("c", [{**SSE, "name": "My Remote!"}, {**STREAMABLE, "name": "", "bundle_id": "stream"}])
    wire = to_wire(computer.get_config())["servers"]
    assert list(wire) == ["My_Remote", "stream"]
    assert (wire["My_Remote"]["name"], wire["My_Remote"]["bundle_id"]) == ("My Remote!", "My_Remote")
    assert [s.bundle_id for s in computer.servers.statuses()] == ["My_Remote", "stream"]
    computer.close()


def test_a_server_added_with_a_known_bundle_id_replaces_it_in_place() -> None:
    computer = Computer("c", [SSE, STREAMABLE])
    computer.servers.add({**SSE, "name": "renamed", "bundle_id": "remote"})
    servers = computer.get_config().servers
    assert list(servers) == ["remote", "stream"] and servers["remote"].name == "renamed"
    computer.close()


def test_a_bad_field_is_named_by_its_path() -> None:
    bad = {**SSE, "server_parameters": {"url": "http://h/sse", "timeout": "soon"}}
    with pytest.raises(Exception) as caught:
        Computer("c", [bad])
    assert caught.value.code == 400 and "$.server_parameters.timeout" in caught.value.message


def test_file_problems_say_what_and_where(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration file .*missing.json"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",\n  oops}')
    with pytest.raises(ConfigError, match="not valid JSON: .* at line 2 column 3"):
        load_config(broken)


def test_env_and_predefined_variables_are_rendered_as_a2c_smcp_renders_them(
    computer_factory: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """${env:VAR} from the Computer's environment, ${userHome} and ${pathSeparator}
    (the server runs in that folder: an unrendered cwd would not start it); an unset
    variable renders as "" with a warning naming it, as in a2c-smcp 0.4.2."""
    monkeypatch.setenv("SMCP_TEST_TOOL_PREFIX", "fromenv")
    home = stdio_config("home", "--prefix", "${env:SMCP_TEST_TOOL_PREFIX}_")
    home["server_parameters"]["cwd"] = "${userHome}${pathSeparator}"
    unset = stdio_config("unset", "--prefix", "${env:SMCP_TEST_NOT_SET_ANYWHERE}u_")
    computer = computer_factory(home, unset)
    names = {tool.name for tool in computer.tools()}
    assert {"home__fromenv_echo", "unset__u_echo"} <= names, names
    assert computer.call_tool("home__fromenv_echo", {"text": "hi"}, timeout=10).text == "hi"
    assert any("SMCP_TEST_NOT_SET_ANYWHERE is not set" in message for message in caplog.messages)
    assert computer.get_config().servers["home"].server_parameters.args[-1] == "${env:SMCP_TEST_TOOL_PREFIX}_"


def test_an_unknown_variable_is_left_as_written_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """a2c-smcp 0.4.2 leaves ${workspaceFolder} (dropped there) as text, silently; we say so."""
    config = {"name": "x", "type": "stdio", "disabled": True, "server_parameters": {"command": "x", "args": ["${workspaceFolder}/a"]}}
    computer = Computer("c", [config])
    assert any("placeholder ${workspaceFolder} is not a variable smcp_sync knows" in m for m in caplog.messages)
    assert computer.get_config().servers["x"].server_parameters.args == ["${workspaceFolder}/a"]
    computer.close()
