"""MCP upstream authorization failures surface as 4006 / 4007, at once (the protocol's
conformance vectors, spec-0.3/fixtures/auth_error_conformance_vectors.json, copied here):
a real protected MCP server over streamable HTTP lets initialize through and answers
only tools/call with the vector's HTTP status."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync.computer import Computer, allow_all
from smcp_sync.protocol.errors import ErrorCode

from ..helpers import FAST, http_config, start_http_server, stop

pytestmark = pytest.mark.timeout(60)

PROTECTED = str(pathlib.Path(__file__).parents[2] / "mcp_servers" / "protected_server.py")
VECTORS = json.loads(pathlib.Path(__file__).with_name("auth_error_conformance_vectors.json").read_text("utf-8"))["vectors"]
#: The time-box: an answer must come well within it (the vectors' "hangs: false").
TIME_BOX = 20.0


def protected_server(upstream: dict[str, Any]) -> tuple[Any, str]:
    args = ["--transport", "streamable", "--status", str(upstream["status"])]
    if upstream.get("www_authenticate"):
        args += ["--www-authenticate", upstream["www_authenticate"]]
    return start_http_server(PROTECTED, *args)


@pytest.mark.parametrize(
    "vector",
    [pytest.param(v, id=v["desc"][:40]) for v in VECTORS],
)
def test_conformance_vector(vector: dict[str, Any], no_leaks: None) -> None:
    if vector["transport"] != "streamable_http":
        pytest.skip("rust-sdk's hand-written SSE client path; the vector itself says python-sdk is N/A")
    proc, url = protected_server(vector["upstream"])
    try:
        with Computer("c", [http_config("locked", "streamable", url)], policy=FAST, confirm=allow_all) as computer:
            computer.start()
            result = computer.call_tool("locked__echo", {"text": "hi"}, timeout=TIME_BOX)
    finally:
        stop(proc)
    expected = vector["expected"]
    assert result.is_error is expected["isError"]
    assert result.error_code == expected["error_code"]
    assert not result.meta.get("a2c_timeout")  # hangs: false
    assert result.meta["mcp_server"] == "locked"
    hinted = {4006: "user_authorization_required", 4007: "token_refresh_required"}  # a2c-smcp 0.4.2's
    assert result.meta["auth_hint"]["action"] == hinted[expected["error_code"]]
    assert str(vector["upstream"]["status"]) in result.text


def test_the_agent_receives_the_code_through_the_office(no_leaks: None) -> None:
    proc, url = protected_server({"status": 403})
    try:
        with serving() as server, connected_computer(
            "c1", [http_config("locked", "streamable", url)], server.url, "o1", timeout=TIME_BOX, policy=FAST
        ), joined_agent("a1", server.url, "o1", timeout=TIME_BOX) as agent:
            result = agent.call_tool("c1", "locked__echo", {"text": "hi"}, timeout=TIME_BOX)
    finally:
        stop(proc)
    assert result.is_error and result.error_code == ErrorCode.TOOL_AUTHORIZATION_FAILED
    assert result.meta["mcp_server"] == "locked"


def test_other_http_errors_stay_execution_failures(no_leaks: None) -> None:
    """Only 401 / 403 are authorization: a 500 from the MCP server is 4003 (decision table)."""
    proc, url = protected_server({"status": 500})
    try:
        with Computer("c", [http_config("locked", "streamable", url)], policy=FAST, confirm=allow_all) as computer:
            computer.start()
            result = computer.call_tool("locked__echo", {"text": "hi"}, timeout=TIME_BOX)
    finally:
        stop(proc)
    assert result.is_error and result.error_code == ErrorCode.TOOL_EXECUTION_FAILED
