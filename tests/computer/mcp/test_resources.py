"""The generic resource primitives Desktop and Finder build on: capabilities, listing
(all pages), reading, subscribing, completion, and resource notifications reaching a
sync listener."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

from smcp_sync.computer import Computer, MCPServerError, ServerEvent, allow_all
from smcp_sync.computer.mcp.manager import BATCH_CONCURRENCY
from smcp_sync.protocol import (
    BadRequestError,
    CompletionArgument,
    CompletionContext,
    MCPServerNotFoundError,
    NotFoundError,
    PromptReference,
    ResourceTemplateReference,
    SMCPTimeoutError,
    TextResourceContents,
)

from ..helpers import FAST, RESOURCE_SERVER, EventLog, stdio_config, write_state

pytestmark = pytest.mark.timeout(60)

COMPLETION_SERVER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "servers", "completion_server.py")
RESOURCES = [
    {"uri": "window://app/main", "name": "main", "text": "main window"},
    {"uri": "window://app/side?priority=10", "name": "side", "text": "side"},
    {"uri": "dpe://docs/a", "name": "doc a", "json": {"title": "A"}},
    {"uri": "dpe://docs/a/pages/0", "name": "page", "text": "p0", "listed": False},
    {"uri": "file:///notes.txt", "name": "notes", "text": "n"},
]


COMPLETING = {"name": "complete", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [COMPLETION_SERVER]}}


def resource_config(state: Path) -> dict[str, Any]:
    write_state(state, RESOURCES)
    return stdio_config("res", "--state", str(state), "--page-size", "2", script=RESOURCE_SERVER)


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computer]:
    """Shared by the tests that only read (they change neither the resources nor the server)."""
    computer = Computer("reader", [resource_config(tmp_path_factory.mktemp("reader") / "state.json")], policy=FAST, confirm=allow_all)
    yield computer.start()
    computer.close()


@pytest.fixture
def computer(computer_factory: Any, tmp_path: Path) -> Computer:
    return computer_factory(resource_config(tmp_path / "state.json"))


def test_capabilities_are_recorded(reader: Computer) -> None:
    res = reader.servers.status("res").capabilities
    assert res.resources and res.resources_subscribe and res.resources_list_changed
    assert res.tools and not res.tools_list_changed and not res.completions


def test_listing_follows_every_page_or_returns_one(reader: Computer) -> None:
    resources = reader._manager.list_resources("res", timeout=10)
    assert [r.uri for r in resources] == [e["uri"] for e in RESOURCES if e.get("listed", True)]
    assert resources[2].mime_type == "application/json"
    page, cursor = reader._manager.list_resources_page("res", None, timeout=10)
    assert [r.uri for r in page] == ["window://app/main", "window://app/side?priority=10"] and cursor == "2"
    page, cursor = reader._manager.list_resources_page("res", "3", timeout=10)
    assert [r.uri for r in page] == ["file:///notes.txt"] and cursor is None


def test_reading_a_resource_and_an_unknown_one(reader: Computer) -> None:
    [contents] = reader._manager.read_resource("res", "dpe://docs/a/pages/0", timeout=10)
    assert contents == TextResourceContents(uri="dpe://docs/a/pages/0", text="p0")
    with pytest.raises(NotFoundError) as caught:  # the server's refusal: a 404, not a 500
        reader._manager.read_resource("res", "dpe://docs/nope", timeout=10)
    assert caught.value.details == {"mcp_server": "res", "mcp_code": -32002}
    assert "not found" in caught.value.message.lower()


def test_notifications_reach_a_sync_listener(computer: Computer) -> None:
    events = EventLog()
    computer.add_listener(events)
    computer._manager.subscribe_resource("res", "window://app/main", timeout=10)
    computer.call_tool("touch", {"uri": "window://app/main", "text": "changed"}, timeout=10)
    updated = events.wait_for(lambda e: e.kind == "resource_updated")
    assert (updated.server, updated.uri) == ("res", "window://app/main")
    computer.call_tool("set_resources", {"resources": RESOURCES[:1]}, timeout=10)
    changed = events.wait_for(lambda e: e.kind == "resources_list_changed")
    assert changed.server == "res" and changed.status.capabilities.resources_subscribe
    assert [r.uri for r in computer._manager.list_resources("res", timeout=10)] == ["window://app/main"]


def test_a_burst_of_notifications_never_blocks_the_loop(computer: Computer) -> None:
    events = EventLog()
    release = threading.Event()

    def slow_listener(event: ServerEvent) -> None:
        release.wait(5)  # a listener that blocks: the loop must not care
        events(event)

    computer.add_listener(slow_listener)
    computer._manager.subscribe_resource("res", "dpe://docs/a", timeout=10)
    assert computer.call_tool("burst", {"n": 200, "uri": "dpe://docs/a"}, timeout=10).text == "200 updated notification(s) sent"
    assert len(computer._manager.list_resources("res", timeout=5)) == 4  # the loop is free
    release.set()
    events.wait_for(lambda e: sum(x.kind == "resource_updated" for x in events.events) == 200)


def test_completion_values_and_errors(computer_factory: Any) -> None:
    computer = computer_factory(COMPLETING)
    capabilities = computer.servers.status("complete").capabilities
    assert capabilities.completions and not capabilities.tools and not capabilities.resources
    ref = ResourceTemplateReference(uri="dpe://docs/{doc_ref}")
    completion = computer._manager.complete("complete", ref, CompletionArgument(name="doc_ref", value="al"), None, timeout=10)
    assert (completion.values, completion.total, completion.has_more) == (["alpha", "alpine"], 2, False)
    with_context = computer._manager.complete(
        "complete", ref, CompletionArgument(name="doc_ref", value="b"), CompletionContext(arguments={"page": "3"}), 10
    )
    assert with_context.values == ["beta@3"]
    with pytest.raises(BadRequestError) as caught:  # the server's refusal: a 400, not a 500
        computer._manager.complete("complete", PromptReference(name="p"), CompletionArgument(name="x", value=""), None, 10)
    assert caught.value.details == {"mcp_server": "complete", "mcp_code": -32602}


def test_unknown_and_stopped_servers_are_clear_errors(computer: Computer) -> None:
    with pytest.raises(MCPServerNotFoundError, match="no MCP server named 'ghost'") as unknown:
        computer._manager.list_resources("ghost", timeout=5)
    assert unknown.value.to_wire() == {"code": 4014, "message": "no MCP server named 'ghost'", "mcp_server": "ghost"}
    computer.servers.stop("res")
    with pytest.raises(MCPServerError) as caught:
        computer._manager.read_resource("res", "window://app/main", timeout=5)
    assert caught.value.details == {"mcp_server": "res", "state": "stopped"}
    assert "MCP server 'res' is stopped" in caught.value.message


def test_a_batch_of_reads_answers_each_uri_in_order_with_failures_per_uri(reader: Computer) -> None:
    uris = ["window://app/main", "dpe://docs/nope", "dpe://docs/a/pages/0"] * 12  # more than one round
    outcomes = reader._manager.read_resources("res", uris, timeout=10)
    assert len(outcomes) == len(uris)
    for uri, outcome in zip(uris, outcomes):
        if uri == "dpe://docs/nope":
            assert isinstance(outcome, NotFoundError) and outcome.details["mcp_server"] == "res"
        else:
            assert [c.text for c in outcome] == ["main window" if uri == "window://app/main" else "p0"]
    assert reader._manager.read_resources("res", [], timeout=10) == []


def test_a_batch_keeps_a_bounded_number_in_flight_and_times_out_each_request(reader: Computer) -> None:
    in_flight, most = 0, 0

    async def counted(session: Any) -> int:
        nonlocal in_flight, most
        in_flight += 1  # on the loop: one thread, no lock needed
        most = max(most, in_flight)
        await anyio.sleep(0.05)
        in_flight -= 1
        return most

    async def stuck(session: Any) -> None:
        await anyio.sleep(30)

    operations = [(counted, "counted")] * (BATCH_CONCURRENCY * 3) + [(stuck, "stuck")]
    outcomes = reader._manager.request_each("res", operations, timeout=0.5)
    assert most == BATCH_CONCURRENCY
    assert all(isinstance(o, int) for o in outcomes[:-1])
    assert isinstance(outcomes[-1], SMCPTimeoutError) and "did not answer stuck within 0.5s" in outcomes[-1].message


def test_a_batch_of_subscriptions_says_which_failed(computer: Computer) -> None:
    uris = ["window://app/main", "dpe://docs/a"]
    assert computer._manager.subscribe_resources("res", uris, timeout=10) == [None, None]
    computer.servers.stop("res")
    [failure] = computer._manager.subscribe_resources("res", ["window://app/main"], timeout=5)
    assert isinstance(failure, MCPServerError) and failure.details == {"mcp_server": "res", "state": "stopped"}
