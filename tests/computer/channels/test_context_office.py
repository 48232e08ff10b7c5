"""Desktop, Finder and resource requests over the wire: a real SMCPServer on loopback, an
agent (the shared `Connection`) in the office, and the Computer answering
`client:get_desktop` / `get_finder` / `read_resource` / `get_resources` / `complete` with
exactly the models' wire form, errors as error objects, and its changes reaching the
agent as `notify:update_finder`."""

from __future__ import annotations

import queue
import shutil
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from smcp_sync.connection.session import Connection

from smcp_sync.computer import Computer
from smcp_sync.demo import SAMPLE_DOCUMENTS
from smcp_sync.protocol import (
    BadRequestError,
    CompleteRet,
    CompletionArgument,
    ErrorCode,
    FinderError,
    GetDeskTopRet,
    GetFinderRet,
    GetResourcesRet,
    InvalidURIError,
    ReadResourceRet,
    ResourceTemplateReference,
    events,
    from_wire,
    to_wire,
)
from smcp_sync.server import SMCPServer
from smcp_sync.computer import ChannelOptions

from ..helpers import FAST
from ..resource_helpers import DOCUMENTS_SERVER, QUICK, QUIET, Announcements, module_config, resource_config

pytestmark = pytest.mark.timeout(60)

OFFICE = "office-ctx"
WINDOWS = [{"uri": "window://app/main?priority=50", "name": "main", "text": "main window"},
           {"uri": "window://app/log", "name": "log", "text": "log tail"}]  # fmt: skip


class Agent:
    """An agent in the office: requests to computer "c1", and the notifications it gets."""

    def __init__(self, url: str) -> None:
        self.connection = Connection("agent", "a1")
        self.notifications: queue.Queue[tuple[str, Any]] = queue.Queue()
        for event in (events.UPDATE_DESKTOP_NOTIFICATION, events.UPDATE_FINDER_NOTIFICATION):
            self.connection.on(event, lambda payload, event=event: self.notifications.put((event, payload)))
        self.connection.connect(url, timeout=5)
        self.connection.join_office(OFFICE, timeout=5)

    def request(self, event: str, **fields: Any) -> Any:
        payload = {"agent": "a1", "req_id": fields.pop("req_id", uuid.uuid4().hex), "computer": "c1", **fields}
        return self.connection.call(event, payload, 20)

    def notifications_within(self, seconds: float) -> list[tuple[str, Any]]:
        """Every notification that arrives within `seconds` of the last one."""
        received = []
        while True:
            try:
                received.append(self.notifications.get(timeout=seconds))
            except queue.Empty:
                return received


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Computer, Agent, Path]]:
    """Computer "c1" (the documents server on a copy of the samples, a window server
    listing one window per page) and an agent, in one office. A test that changes the
    folder puts it back."""
    folder = tmp_path_factory.mktemp("office") / "documents"
    shutil.copytree(SAMPLE_DOCUMENTS, folder)
    documents = module_config("docs", DOCUMENTS_SERVER, "--root", str(folder), "--poll-interval", "0.1")
    windows = resource_config("windows", folder.parent / "windows.json", WINDOWS, "--page-size", "1")
    computer = Computer("c1", [documents, windows], policy=FAST, channels=ChannelOptions(update_debounce=QUICK))
    with SMCPServer() as server:
        url = server.start()
        try:
            announced = Announcements()
            computer.add_update_listener(announced)
            computer.start()
            announced.settle()  # the announcements of the start go nowhere: not in the office yet
            computer.connect(url, OFFICE)
            agent = Agent(url)
            try:
                yield computer, agent, folder
            finally:
                agent.connection.close()
        finally:
            computer.close()


def test_every_context_request_is_answered_with_its_model(office: tuple[Computer, Agent, Path]) -> None:
    computer, agent, _ = office
    finder = agent.request(events.GET_FINDER, req_id="f1", keywords=["sales", "design"], limit=1)
    local = computer.finder(keywords=["sales", "design"], limit=1)
    assert finder == to_wire(GetFinderRet(documents=local.documents, total_count=2, req_id="f1"))
    assert finder["total_count"] == 2 and finder["documents"][0]["server"] == "docs"

    desktop = agent.request(events.GET_DESKTOP, req_id="d1", desktop_size=5)
    assert desktop == {"desktops": ["window://app/main?priority=50\n\nmain window", "window://app/log\n\nlog tail"],
                       "req_id": "d1"}  # fmt: skip
    directed = agent.request(events.GET_DESKTOP, req_id="d2", window="window://app/log")
    assert from_wire(GetDeskTopRet, directed).desktops == ["window://app/log\n\nlog tail"]

    uri = f"{local.documents[0].uri}?depth=pages"
    read = agent.request(events.READ_RESOURCE, req_id="r1", uri=uri)
    assert read == to_wire(ReadResourceRet(contents=computer.read_resource(uri), req_id="r1"))
    assert read["contents"][0]["mimeType"] == "application/json" and '"pages"' in read["contents"][0]["text"]

    page = from_wire(GetResourcesRet, agent.request(events.GET_RESOURCES, req_id="g1", mcp_server="windows"))
    assert [r.uri for r in page.resources] == ["window://app/main?priority=50"]
    assert (page.next_cursor, page.req_id) == ("1", "g1")
    last = agent.request(events.GET_RESOURCES, mcp_server="windows", cursor="1")
    assert [r["uri"] for r in last["resources"]] == ["window://app/log"] and "next_cursor" not in last

    ref = {"type": "ref/resource", "uri": "dpe://com.example.docs/{doc_ref}/pages/{page_index}"}
    completed = agent.request(events.COMPLETE, req_id="c1", ref=ref, argument={"name": "doc_ref", "value": "sales"})
    local_ref = ResourceTemplateReference(uri=ref["uri"])
    expected = computer.complete(local_ref, CompletionArgument(name="doc_ref", value="sales"))
    assert completed == to_wire(CompleteRet(completion=expected, req_id="c1"))
    assert completed["completion"]["hasMore"] is False and len(completed["completion"]["values"]) == 1


def test_failures_reach_the_agent_as_typed_errors(office: tuple[Computer, Agent, Path]) -> None:
    computer, agent, _ = office
    document = computer.finder(file_type="csv").documents[0]
    with pytest.raises(FinderError) as caught:
        agent.request(events.READ_RESOURCE, uri=f"{document.uri}/pages/3")
    assert caught.value.code == ErrorCode.PAGE_OUT_OF_RANGE
    assert caught.value.details == {"doc_ref": document.doc_ref, "page_index": 3, "page_count": 1, "mcp_server": "docs"}
    with pytest.raises(FinderError) as caught:
        agent.request(events.READ_RESOURCE, uri="dpe://com.example.docs/missing")
    assert caught.value.code == ErrorCode.DOCUMENT_NOT_FOUND
    with pytest.raises(FinderError) as caught:
        agent.request(events.READ_RESOURCE, uri=f"{document.uri}/elements/none")
    assert caught.value.code == ErrorCode.ELEMENT_NOT_FOUND
    with pytest.raises(InvalidURIError, match="rule 5: depth"):
        agent.request(events.READ_RESOURCE, uri=f"{document.uri}?depth=everything")

    with pytest.raises(BadRequestError, match="limit must be an integer in \\[1, 100\\], got 0"):
        agent.request(events.GET_FINDER, limit=0)
    with pytest.raises(BadRequestError, match=r"\$\.limit"):
        agent.request(events.GET_FINDER, limit="ten")
    with pytest.raises(BadRequestError, match=r"\$\.argument"):
        agent.request(events.COMPLETE, ref={"type": "ref/prompt", "name": "p"})
    with pytest.raises(BadRequestError, match="needs mcp_server"):
        agent.request(events.READ_RESOURCE, uri="file:///etc/hosts")
    with pytest.raises(BadRequestError, match="invalid window URI"):
        agent.request(events.GET_DESKTOP, window="window://")
    assert agent.request(events.GET_FINDER)["total_count"] == 5  # every handler thread survived


def test_a_new_document_reaches_the_agent_as_one_notification(office: tuple[Computer, Agent, Path]) -> None:
    _, agent, folder = office
    assert agent.notifications_within(QUIET) == []  # nothing pending from earlier tests
    added = folder / "added.md"
    written = folder.parent / "added.md.part"  # written whole, then moved in: one change, as a save is
    written.write_text("# Added over the wire\n\nA short note.\n", encoding="utf-8")
    written.replace(added)  # (written in place, its creation and its write are two changes, apart on a busy machine)
    try:
        assert agent.notifications.get(timeout=15) == (events.UPDATE_FINDER_NOTIFICATION, {"computer": "c1"})
        assert agent.notifications_within(QUIET * 2) == []  # one change, one notification
        titles = [d["title"] for d in agent.request(events.GET_FINDER)["documents"]]
        assert "Added over the wire" in titles and len(titles) == 6
    finally:
        added.unlink()
    assert agent.notifications.get(timeout=15) == (events.UPDATE_FINDER_NOTIFICATION, {"computer": "c1"})
    assert agent.request(events.GET_FINDER)["total_count"] == 5


def test_joining_right_after_start_sends_no_stale_update_notice(tmp_path: Path, no_leaks: None) -> None:
    """The start's first listing is a change only until the Computer enters the office:
    agents fetch everything on `notify:enter_office`, so an update notice on its heels
    would make them fetch twice."""
    windows = resource_config("windows", tmp_path / "windows.json", WINDOWS)
    slow_debounce = 1.0  # long enough for the join to happen while the start's change is pending
    with SMCPServer() as server:
        url = server.start()
        agent = Agent(url)
        computer = Computer("c1", [windows], policy=FAST, channels=ChannelOptions(update_debounce=slow_debounce))
        try:
            computer.start()
            computer.connect(url, OFFICE)
            assert agent.notifications_within(slow_debounce + QUIET) == []
            computer.servers.add(resource_config("more", tmp_path / "more.json", WINDOWS[:1]))
            assert [event for event, _ in agent.notifications_within(slow_debounce + QUIET)] == [
                events.UPDATE_DESKTOP_NOTIFICATION
            ]
        finally:
            computer.close()
            agent.connection.close()
