"""`get_config`: servers and inputs as agents may see them, never with secrets."""

from __future__ import annotations

import json

import pytest

from smcp_sync.computer import REDACTED, Computer
from smcp_sync.protocol import SMCPError, to_wire
from smcp_sync.computer import Inputs

pytestmark = pytest.mark.timeout(20)

INPUTS = [
    {"type": "promptString", "id": "token", "description": "Token", "password": True, "default": "dev-token"},
    {"type": "promptString", "id": "port", "description": "Port"},
    {"type": "pickString", "id": "region", "description": "Region", "options": ["eu", "us"]},
]
STDIO = {
    "name": "files",
    "type": "stdio",
    "server_parameters": {
        "command": "mcp-files",
        "args": ["--token", "${input:token}", "--region", "${input:region}"],
        "env": {"API_KEY": "literal-secret", "TOKEN": "${input:token}"},
    },
}
HTTP = {
    "name": "remote",
    "type": "streamable",
    "server_parameters": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
}
# a placeholder where the schema needs a number: shown rendered (it is not a secret)
TYPED = {"name": "typed", "type": "sse", "server_parameters": {"url": "http://127.0.0.1:1/sse", "timeout": "${input:port}"}}
SECRET_NUMBER = {
    "name": "odd", "type": "sse", "server_parameters": {"url": "http://127.0.0.1:1/sse", "timeout": "${input:token}"},
}


def test_secrets_never_appear_in_the_config_answer() -> None:
    computer = Computer(
        "c",
        config={"servers": [STDIO, HTTP, TYPED], "inputs": INPUTS},
        inputs=Inputs(values={"token": "s3cr3t-value", "port": 7, "region": "us"}),
    )
    answer = computer.get_config()
    wire = json.dumps(to_wire(answer))
    for secret in ("s3cr3t-value", "literal-secret", "dev-token"):
        assert secret not in wire
    files = answer.servers["files"].server_parameters
    assert files.env == {"API_KEY": REDACTED, "TOKEN": REDACTED}
    assert files.args == ["--token", "${input:token}", "--region", "${input:region}"]  # as written
    assert answer.servers["remote"].server_parameters.headers == {"Authorization": REDACTED}
    assert answer.servers["typed"].server_parameters.timeout == 7.0
    token = next(item for item in answer.inputs if item.id == "token")
    assert token.default == REDACTED and token.password is True
    assert computer.diagnostics() == []
    computer.close()


def test_a_config_that_cannot_be_shown_without_a_secret_is_left_out_and_said_so() -> None:
    inputs = [{"type": "promptString", "id": "token", "description": "T", "password": True}]
    computer = Computer("c", config={"servers": [SECRET_NUMBER], "inputs": inputs}, inputs=Inputs(values={"token": 5}))
    answer = computer.get_config()
    assert answer.servers == {}
    assert computer.diagnostics() == ["configuration of MCP server 'odd' is not shown: it cannot be shown without secrets"]
    assert "5" not in json.dumps(to_wire(answer.servers))
    computer.close()


INLINE = {
    "name": "inline",
    "type": "stdio",
    "server_parameters": {
        "command": "mcp-inline",
        "args": [
            "--token", "ghp_flagvalue", "--api-key=sk-live-assigned", "--root", "/srv/data",
            "https://alice:hunter2@api.example/v1?api_key=qk-1&page=2", "PASSWORD=pw-assigned", "--verbose",
        ],
    },
}  # fmt: skip
REMOTE_INLINE = {
    "name": "web", "type": "sse",
    "server_parameters": {"url": "https://bob:s3cret-pass@mcp.example/sse?X-Amz-Signature=sig-1&region=eu&access_token=at-1"},
}  # fmt: skip


def test_credentials_written_in_urls_and_args_are_redacted() -> None:
    computer = Computer("c", [INLINE, REMOTE_INLINE])
    answer = computer.get_config()
    wire = json.dumps(to_wire(answer))
    for secret in ("ghp_flagvalue", "sk-live-assigned", "hunter2", "qk-1", "pw-assigned", "s3cret-pass", "sig-1", "at-1", "alice", "bob"):
        assert secret not in wire, secret
    assert answer.servers["inline"].server_parameters.args == [
        "--token", REDACTED, f"--api-key={REDACTED}", "--root", "/srv/data",
        f"https://{REDACTED}@api.example/v1?api_key={REDACTED}&page=2", f"PASSWORD={REDACTED}", "--verbose",
    ]  # fmt: skip
    assert answer.servers["web"].server_parameters.url == (
        f"https://{REDACTED}@mcp.example/sse?X-Amz-Signature={REDACTED}&region=eu&access_token={REDACTED}"
    )
    computer.close()


def test_management_diagnostics_stay_on_the_computer(tmp_path) -> None:
    """computer-management/protocol.md §7: restart reasons (OS errors) and config notes
    are the owner's (`diagnostics()`), never in the answer an Agent gets."""
    missing = {"name": "gone", "type": "stdio", "server_parameters": {"command": str(tmp_path / "no-such-binary")}}
    computer = Computer("c", [{**missing, "x-typo": 1}]).start(timeout=10)
    try:
        wire = to_wire(computer.get_config())
        notes = computer.diagnostics()
        assert any("'gone' is restarting" in note and "FileNotFoundError" in note for note in notes), notes
        assert any("field 'x-typo'" in note for note in notes), notes
        assert "diagnostics" not in wire
        assert "FileNotFoundError" not in json.dumps(wire) and "x-typo" not in json.dumps(wire)
        with pytest.raises(SMCPError) as refused:  # what client:get_resources would answer
            computer.get_resources("gone")
        assert refused.value.message == "MCP server 'gone' is restarting"
    finally:
        computer.close()
