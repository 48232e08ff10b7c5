"""Exposed tool names on the wire (spec-0.3 BundleID model), Agent -> Server -> Computer ->
two real tool servers offering the same tools: `{bundle_id}__{tool}` names with
`bundle_id`, routing by exposed name, and our bare-name rule (accepted while one exposed
tool has it; ambiguous: 4001 with the candidates)."""

from __future__ import annotations

from typing import Iterator

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync import Agent, Computer
from smcp_sync.protocol import ErrorCode

from ..helpers import FAST, stdio_config

pytestmark = pytest.mark.timeout(60)

OFFICE = "tool-names"
TIMEOUT = 20


@pytest.fixture(scope="module")
def office() -> Iterator[tuple[Computer, Agent]]:
    servers = [stdio_config("Files (local)"), stdio_config("files.remote", tool_meta={"echo": {"alias": "say"}})]
    with serving() as server:
        with connected_computer("c1", servers, server.url, OFFICE, timeout=TIMEOUT, policy=FAST) as computer:
            with joined_agent("a1", server.url, OFFICE, timeout=TIMEOUT) as agent:
                yield computer, agent


def test_tools_are_listed_under_exposed_names_with_their_bundle_id(office: tuple[Computer, Agent]) -> None:
    _, agent = office
    tools = {tool.name: tool.bundle_id for tool in agent.get_tools("c1", timeout=TIMEOUT)}
    assert tools["Files_local__echo"] == "Files_local" and tools["files_remote__say"] == "files_remote"
    assert "files_remote__echo" not in tools
    assert set(agent.get_config("c1", timeout=TIMEOUT).servers) == {"Files_local", "files_remote"}


def test_calls_route_by_exposed_name_and_by_an_unambiguous_bare_name(office: tuple[Computer, Agent]) -> None:
    computer, agent = office
    assert agent.call_tool("c1", "files_remote__add", {"a": 1, "b": 2}, timeout=TIMEOUT).text == "3"
    assert agent.call_tool("c1", "say", {"text": "hi"}, timeout=TIMEOUT).text == "hi"
    assert agent.call_tool("c1", "echo", {"text": "ho"}, timeout=TIMEOUT).text == "ho"  # the other's is "say"
    assert [(r.server, r.tool) for r in computer.tool_call_history()[-3:]] == [
        ("files_remote", "files_remote__add"), ("files_remote", "files_remote__say"), ("Files_local", "Files_local__echo"),
    ]  # fmt: skip


def test_an_ambiguous_bare_name_is_4001_listing_the_candidates(office: tuple[Computer, Agent]) -> None:
    _, agent = office
    result = agent.call_tool("c1", "add", {"a": 1, "b": 2}, timeout=TIMEOUT)
    assert result.is_error and result.error_code == ErrorCode.TOOL_NOT_FOUND
    assert result.meta["candidates"] == ["Files_local__add", "files_remote__add"]
    unknown = agent.call_tool("c1", "Files_local__nothing", {}, timeout=TIMEOUT)
    assert unknown.error_code == ErrorCode.TOOL_NOT_FOUND and "candidates" not in unknown.meta
