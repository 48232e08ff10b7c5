"""Config files written for the official SDK load unchanged, or are refused naming the
field and why; fields smcp_sync does not read are reported, never dropped silently.

Fixtures (`official_configs/`): what a2c-smcp 0.4.2 and 0.1.6 write for a config
(their models' ``model_dump(mode="json")``, produced in their own virtualenvs, and
0.4.2's ``mcp.json`` form: by alias, servers keyed by name), the ``server add`` example
of both SDKs' README, the Computer documents of spec-0.3's conformance tests (§2.1–2.5),
and the configs of the BundleID conformance vectors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from smcp_sync import Computer
from smcp_sync.computer import ConfigError, load_config
from smcp_sync.computer.config.redaction import REDACTED
from smcp_sync.protocol import StdioServerConfig, StreamableHttpServerConfig
from smcp_sync.computer import Inputs

pytestmark = pytest.mark.timeout(20)

FIXTURES = Path(__file__).with_name("official_configs")
VECTORS = json.loads((Path(__file__).parents[2] / "protocol" / "bundle_id_conformance_vectors.json").read_text("utf-8"))
INPUT_VALUES = {"root": "/tmp", "token": "t0ken", "who": "me", "api_token": "t0ken"}


def _computer(name: str) -> Computer:
    return Computer("c", config=FIXTURES / name, inputs=Inputs(values=INPUT_VALUES))  # not started: nothing runs


@pytest.mark.parametrize("name", ["a2c_smcp_0.4.2_model_dump.json", "a2c_smcp_0.4.2_mcp.json"])
def test_what_a2c_smcp_0_4_2_writes_loads_and_its_unknown_tool_meta_key_is_reported(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)  # its envFile ".env" is relative to the working directory, as in 0.4.2
    (tmp_path / ".env").write_text("ROOT_HINT=1\n")
    with caplog.at_level(logging.WARNING, logger="smcp_sync.computer.mcp.manager"):
        computer = _computer(name)
        shown = computer.get_config()
    assert set(shown.servers) == {"files", "remote", "web_1"}
    files, web = shown.servers["files"], shown.servers["web_1"]
    assert isinstance(files, StdioServerConfig) and isinstance(web, StreamableHttpServerConfig)
    assert (files.vrl, files.env_file, files.tool_meta["read_file"].alias) == (".structuredContent.n = 1", ".env", "read")
    assert files.server_parameters.args[-1] == "${input:root}" and web.server_parameters.timeout == 12.0
    assert [item.id for item in shown.inputs] == ["root", "token", "who"]
    note = "MCP server 'files': field 'tool_meta.read_file.x-extra' is not known to smcp_sync and is ignored"
    assert computer.diagnostics() == [note]
    assert "MCP server 'files': field 'tool_meta.read_file.x-extra' is not known to smcp_sync; ignored" in caplog.messages


def test_what_a2c_smcp_0_1_6_writes_loads_with_its_plain_pick_string_options() -> None:
    computer = _computer("a2c_smcp_0.1.6_model_dump.json")
    shown = computer.get_config()
    assert set(shown.servers) == {"files", "remote", "web"}
    assert shown.servers["remote"].server_parameters.headers == {"Authorization": REDACTED}
    assert shown.inputs[0].options == ["/tmp", "/srv"] and computer.diagnostics() == []


def test_the_readme_server_add_example_loads() -> None:
    shown = _computer("a2c_smcp_readme_server_add.json").get_config()
    assert shown.servers["playwright-mcp"].server_parameters.args == ["@playwright/mcp@latest", "--port", "8931"]


def test_the_conformance_documents_load_or_say_which_field_and_why(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="smcp_sync.computer.config.files"):
        assert load_config(FIXTURES / "spec_0.3_conformance_2.1.json").servers == ()
    assert "configuration field 'marketplaces' is not known to smcp_sync; ignored" in caplog.messages  # empty
    assert "configuration field 'name' is not known to smcp_sync; ignored" in caplog.messages
    assert set(_computer("spec_0.3_conformance_2.2.json").get_config().servers) == {"echo"}
    secret = _computer("spec_0.3_conformance_2.5.json").get_config().servers["secret-server"]
    assert secret.server_parameters.args == ["${input:api_token}"] and "t0ken" not in repr(secret)
    with pytest.raises(ConfigError, match=r"'marketplaces' is not supported: smcp_sync has no plugin or marketplace"):
        load_config(FIXTURES / "spec_0.3_conformance_2.4.json")
    with pytest.raises(Exception, match=r"required field missing @ \$\.server_parameters"):
        _computer("spec_0.3_conformance_2.3.json")  # the fixture leaves it out: 0.4.2 refuses it too


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda vector: vector["expected_bundle_id"])
def test_the_bundle_id_vectors_configs_load_under_their_expected_bundle_id(vector: dict) -> None:
    flat = dict(vector["config"])
    kind, explicit = flat.pop("type"), flat.pop("bundle_id", None)
    config = {"name": vector["name"], "type": kind, "server_parameters": flat}
    if explicit is not None:
        config["bundle_id"] = explicit
    shown = Computer("c", [config]).get_config()
    assert list(shown.servers) == [vector["expected_bundle_id"]]


def test_the_oauth_block_is_accepted_for_http_servers_in_each_mode_and_a_wrong_one_is_refused_naming_the_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    web = {"name": "web", "type": "streamable", "server_parameters": {"url": "http://127.0.0.1:9/mcp"}}
    dynamic = {"scopes": ["read"], "clientName": "app", "mode": {"type": "authorizationCode", "registration": "dynamic"}}
    assert Computer("c", [{**web, "oauth": dynamic}]).get_config().servers["web"].oauth.scopes == ["read"]
    assert Computer("c", [{**web, "oauth": None}]).diagnostics() == []
    secret = {"id": "s", "type": "promptString", "description": "secret", "password": True}
    modes = [
        {"type": "authorizationCode", "registration": "preregistered", "clientId": "x", "clientSecretInput": "s"},
        {"type": "authorizationCode", "registration": "clientMetadataDocument", "url": "https://app.example/client.json"},
        {"type": "clientCredentialsSecret", "clientId": "x", "clientSecretInput": "s"},
        {"type": "clientCredentialsPrivateKeyJwt", "clientId": "x", "privateKeyInput": "s", "algorithm": "ES256"},
    ]
    hush, another = _ec_private_key(), _ec_private_key()  # a secret, or a key that can sign ES256
    for mode in modes:
        config = {**web, "oauth": {"mode": mode, "resource": "https://mcp.example/mcp"}}
        host = Computer("c", [config], inputs=Inputs(definitions=[secret], values={"s": hush}))
        assert host.get_config().servers["web"].oauth.mode == mode
        assert host.set_input("s", another) == (["web"] if "s" in mode.values() else [])  # configured again
    # client credentials without oauth.mode.issuer: said, once per configuration
    warned = "MCP server 'web': no oauth.mode.issuer: its client credentials go to the authorization server the MCP server names"
    assert [record.getMessage() for record in caplog.records].count(warned) == 4  # 2 modes, each configured twice
    refusals = [
        ({**web, "type": "stdio", "server_parameters": {"command": "x"}, "oauth": dynamic}, "oauth", "sse and streamable"),
        ({**web, "oauth": {"mode": {"type": "clientCredentials", "clientId": "x"}}}, "oauth.mode", "not one of"),
        ({**web, "oauth": {"mode": {"type": "clientCredentialsSecret", "clientId": "x"}}}, "oauth.mode.clientSecretInput", "required"),
        ({**web, "oauth": {"mode": {"type": "authorizationCode", "registration": "preregistered"}}}, "oauth.mode.clientId", "required"),
        ({**web, "oauth": {**dynamic, "mode": {**dynamic["mode"], "clientId": "x"}}}, "oauth.mode.clientId", "not a field"),
        (
            {**web, "oauth": {"mode": {"type": "authorizationCode", "registration": "clientMetadataDocument", "url": "http://app/c"}}},
            "oauth.mode.url",
            "https URL with a path",
        ),
        (
            {**web, "oauth": {"mode": {**modes[3], "algorithm": "HS256"}}},
            "oauth.mode.algorithm",
            "RS256",
        ),
        ({**web, "oauth": {**dynamic, "resource": "mcp.example"}}, "oauth.resource", "absolute http(s) URL"),
    ]
    for config, field, why in refusals:
        with pytest.raises(ConfigError) as refused:
            Computer("c", [config])
        assert refused.value.message.startswith(f"MCP server 'web': field {field!r} is not ")
        assert why in refused.value.message
        assert refused.value.details == {"field": field, "mcp_server": "web"}


def test_an_unknown_field_is_reported_by_path_and_the_rest_loads() -> None:
    config = {"name": "x", "type": "stdio", "timeout": 3, "server_parameters": {"command": "x", "shell": True}}
    assert Computer("c", [config]).diagnostics() == [
        "MCP server 'x': field 'timeout' is not known to smcp_sync and is ignored",
        "MCP server 'x': field 'server_parameters.shell' is not known to smcp_sync and is ignored",
    ]


def _ec_private_key() -> str:
    """A P-256 private key in unencrypted PEM."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
