"""The same `vrl` config run by our Computer and by each official SDK's Computer (its own
virtualenv), side by side in one office of our Server, on the same real MCP server: our
Agent reads the same `meta.a2c_vrl_transformed` from both, byte for byte."""

from __future__ import annotations

import json

import pytest
from interop.harness import start_official_computer
from office_parts import connected_computer, joined_agent, serving

from smcp_sync.computer.config.vrl import VRL_TRANSFORMED

from ..helpers import FAST, stdio_config

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

OFFICE = "vrl-interop"
TIMEOUT = 30
#: Renames a field of the structured content, adds a computed one, keeps everything else.
SCRIPT = """
.structuredContent.text = del(.structuredContent.result)
.structuredContent.length = strlen(string!(.structuredContent.text))
.structuredContent.shout = upcase(string!(.parameters.text))
"""


def test_their_computer_and_ours_transform_a_result_identically(official_peer, no_leaks, spawn) -> None:
    # no tool_meta: 0.4.2 would add its a2c_tool_meta to the result's meta (the event) first
    config = stdio_config("Weather", vrl=SCRIPT)
    with serving() as server:
        with connected_computer("ours", [config], server.url, OFFICE, timeout=TIMEOUT, policy=FAST):
            spawn(start_official_computer(official_peer.python, server.url, OFFICE, "theirs", config, auth_via="auth"))
            with joined_agent("a1", server.url, OFFICE, timeout=TIMEOUT) as agent:
                params = {"text": "héllo wörld"}
                ours = agent.call_tool("ours", "Weather__echo", params, timeout=TIMEOUT)
                theirs = agent.call_tool("theirs", official_peer.tool("Weather", "echo"), params, timeout=TIMEOUT)
    assert not theirs.is_error, theirs.text
    assert ours.meta[VRL_TRANSFORMED] == theirs.meta[VRL_TRANSFORMED]
    assert json.loads(ours.meta[VRL_TRANSFORMED])["structuredContent"] == {
        "text": "héllo wörld", "length": 11, "shout": "HÉLLO WÖRLD",
    }  # fmt: skip
