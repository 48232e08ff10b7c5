"""`get_config`: servers and inputs as agents may see them, never with secrets."""

from __future__ import annotations

import json

import pytest

from smcp_sync.computer import REDACTED, Computer
from smcp_sync.protocol import to_wire

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
        "c", config={"servers": [STDIO, HTTP, TYPED], "inputs": INPUTS},
        input_values={"token": "s3cr3t-value", "port": 7, "region": "us"},
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
    assert answer.diagnostics is None
    computer.close()


def test_a_config_that_cannot_be_shown_without_a_secret_is_left_out_and_said_so() -> None:
    inputs = [{"type": "promptString", "id": "token", "description": "T", "password": True}]
    computer = Computer("c", config={"servers": [SECRET_NUMBER], "inputs": inputs}, input_values={"token": 5})
    answer = computer.get_config()
    assert answer.servers == {}
    assert answer.diagnostics == ["configuration of MCP server 'odd' is not shown: it cannot be shown without secrets"]
    assert "5" not in json.dumps(to_wire(answer.servers))
    computer.close()
