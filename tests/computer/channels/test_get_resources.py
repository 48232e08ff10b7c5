"""`client:get_resources` on the wire, Agent -> Server -> Computer -> a real MCP resource
server: a2c-smcp 0.4.2's answer shape (snake_case `A2CResource` entries with
`annotations` and `_meta`, `next_cursor` absent on the last page), servers named by
bundle_id, 4014 / 4015; and our Agent reading the camelCase entries of our earlier version."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync import Agent
from smcp_sync.protocol import (
    CapabilityNotSupportedError,
    GetResourcesRet,
    MCPServerNotFoundError,
    events,
    from_wire,
)

from ..helpers import FAST, RESOURCE_SERVER, stdio_config, write_state

pytestmark = pytest.mark.timeout(60)

OFFICE = "resources-office"
TIMEOUT = 20
RESOURCES = [
    {
        "uri": "window://com.example.editor/main",
        "name": "main",
        "mimeType": "text/plain",
        "text": "editor",
        "annotations": {"priority": 0.8, "audience": ["assistant"], "lastModified": "2026-01-15T08:30:00Z"},
        "_meta": {"fullscreen": True},
    },
    {"uri": "dpe://docs/a", "name": "doc a", "json": {"title": "A"}},
    {"uri": "file:///notes.txt", "name": "notes", "description": "plain", "text": "n"},
]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    state = tmp_path_factory.mktemp("get-resources") / "state.json"
    write_state(state, RESOURCES)
    servers: list[dict[str, Any]] = [
        # a display name that is not a bundle_id: the server is named by its derived one
        stdio_config("My Resources!", "--state", str(state), "--page-size", "2", script=RESOURCE_SERVER),
        stdio_config("tools only"),  # the tool server declares no resources capability
    ]
    with serving() as server:
        with connected_computer("c1", servers, server.url, OFFICE, timeout=TIMEOUT, policy=FAST):
            with joined_agent("a1", server.url, OFFICE, timeout=TIMEOUT) as agent:
                yield agent


def _raw(agent: Agent, **request: Any) -> dict[str, Any]:
    """The answer as it came over the wire."""
    payload = {"agent": "a1", "req_id": "r1", "computer": "c1", **request}
    return agent._connection.call(events.GET_RESOURCES, payload, TIMEOUT)


def test_the_answer_has_the_0_4_2_shape_on_the_wire(agent: Agent) -> None:
    first = _raw(agent, mcp_server="My_Resources")
    assert first["next_cursor"] == "2" and first["req_id"] == "r1"
    assert first["resources"][0] == {
        "uri": "window://com.example.editor/main",
        "name": "main",
        "mime_type": "text/plain",
        "annotations": {"priority": 0.8, "audience": ["assistant"], "last_modified": "2026-01-15T08:30:00Z"},
        "_meta": {"fullscreen": True},
    }
    assert first["resources"][1] == {"uri": "dpe://docs/a", "name": "doc a", "mime_type": "application/json"}
    last = _raw(agent, mcp_server="My_Resources", cursor="2")
    assert last["resources"] == [
        {"uri": "file:///notes.txt", "name": "notes", "description": "plain"}
    ] and "next_cursor" not in last  # omitted, not null, on the last page


def test_the_agent_pages_through_keeping_every_field(agent: Agent) -> None:
    page = agent.get_resources("c1", "My_Resources", timeout=TIMEOUT)
    window = page.resources[0]
    assert (window.mime_type, window.meta) == ("text/plain", {"fullscreen": True})
    assert window.annotations is not None and window.annotations.priority == 0.8
    assert window.annotations.last_modified == "2026-01-15T08:30:00Z"
    rest = agent.get_resources("c1", "My_Resources", cursor=page.next_cursor, timeout=TIMEOUT)
    assert [r.uri for r in page.resources + rest.resources] == [r["uri"] for r in RESOURCES]
    assert rest.next_cursor is None


def test_an_unknown_server_is_4014_naming_it(agent: Agent) -> None:
    # the display name is not an identity: only the bundle_id names the server
    with pytest.raises(MCPServerNotFoundError) as caught:
        agent.get_resources("c1", "My Resources!", timeout=TIMEOUT)
    assert caught.value.code == 4014 and caught.value.fields["mcp_server"] == "My Resources!"


def test_a_server_without_resources_is_4015(agent: Agent) -> None:
    with pytest.raises(CapabilityNotSupportedError) as caught:
        agent.get_resources("c1", "tools_only", timeout=TIMEOUT)
    assert caught.value.code == 4015
    assert caught.value.fields == {"mcp_server": "tools_only", "capability": "resources"}


def test_entries_in_the_camel_case_form_of_earlier_versions_are_read_too() -> None:
    earlier = {
        "resources": [
            {
                "uri": "window://a/b",
                "name": "b",
                "mimeType": "text/html",
                "annotations": {"priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"},
                "meta": {"fullscreen": False},
            }
        ],
        "req_id": "r",
        "next_cursor": None,
    }
    [entry] = from_wire(GetResourcesRet, earlier).resources
    assert (entry.mime_type, entry.meta) == ("text/html", {"fullscreen": False})
    assert entry.annotations is not None and entry.annotations.last_modified == "2026-01-01T00:00:00Z"
