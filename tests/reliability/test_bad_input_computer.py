"""Bad input to the Computer: generated malformed payloads for every event it handles,
sent by a stand-in Server (a bare Socket.IO server) that forwards what an SMCPServer
would refuse before routing. Each gets a coded error or a well-formed answer, no thread
dies, nothing is logged as a failure, and the Computer keeps serving.

Two Computer bugs the fuzzing found keep their own reproducers below: huge request
values quoted whole in refusals, and an MCP server's refusal of a request (unknown
method, resource or params) relayed as a 500.
"""

from __future__ import annotations

import contextlib
import logging
import queue
from pathlib import Path
from typing import Any, Iterator

import pytest
import socketio
from hypothesis import given

from smcp_sync.protocol import ErrorCode, events, from_wire
from smcp_sync.protocol.models import (
    CallToolResult,
    CompleteRet,
    GetComputerConfigRet,
    GetDeskTopRet,
    GetFinderRet,
    GetResourcesRet,
    GetToolsRet,
    ReadResourceRet,
)
from smcp_sync.server.app import DEFAULT_MAX_HTTP_BUFFER_SIZE
from smcp_sync.server.transport.background_http import BackgroundHTTPServer
from smcp_sync.server.transport.engine import SocketIOServer

from .malformed import FUZZ, coded_error, malformed_arguments
from .parts import TOOL_SERVER, start_computer, tool_server, write_state

try:
    from tests.mcp_servers import RESOURCE_SERVER, http_server
except ImportError:  # tests/ itself is on sys.path
    from mcp_servers import RESOURCE_SERVER, http_server

#: The stdio test server that answers `completion/complete` (the shared ones do not).
COMPLETION_SERVER = str(Path(__file__).parents[1] / "computer" / "servers" / "completion_server.py")

OFFICE = "office-1"
ASK_TIMEOUT = 20.0
BASE = {"agent": "a1", "req_id": "r", "computer": "c1"}
#: A valid request per event, aimed at what the Computer really hosts.
REQUESTS = {
    events.TOOL_CALL: {**BASE, "tool_name": "echo", "params": {"text": "x"}, "timeout": 5},
    events.GET_CONFIG: BASE,
    events.GET_TOOLS: BASE,
    events.GET_DESKTOP: {**BASE, "desktop_size": 3, "window": "window://app/main"},
    events.GET_FINDER: {**BASE, "keywords": ["doc"], "limit": 5},
    events.READ_RESOURCE: {**BASE, "uri": "dpe://library/a"},
    events.GET_RESOURCES: {**BASE, "mcp_server": "res"},
    events.COMPLETE: {
        **BASE,
        "ref": {"type": "ref/resource", "uri": "dpe://docs/{doc_ref}"},
        "argument": {"name": "doc_ref", "value": "a"},
        "mcp_server": "complete",
    },
    events.CANCEL_TOOL_CALL_NOTIFICATION: {"agent": "a1", "req_id": "r"},
}
#: The model of each event's answer (the cancel notification has none).
ANSWERS = {
    events.TOOL_CALL: CallToolResult,
    events.GET_CONFIG: GetComputerConfigRet,
    events.GET_TOOLS: GetToolsRet,
    events.GET_DESKTOP: GetDeskTopRet,
    events.GET_FINDER: GetFinderRet,
    events.READ_RESOURCE: ReadResourceRet,
    events.GET_RESOURCES: GetResourcesRet,
    events.COMPLETE: CompleteRet,
}
#: The documents live on host "library"; the completion server completes the template
#: "dpe://docs/{doc_ref}", a host nobody lists.
RESOURCES = [
    {"uri": "window://app/main", "name": "main", "text": "main window"},
    {"uri": "dpe://library/a", "name": "doc a", "json": {"title": "A"}},
    {"uri": "dpe://library/a/pages/0", "name": "page", "text": "p0", "listed": False},
]


class StandInServer:
    """Plays the Server for one Computer: records its join, then asks it anything."""

    def __init__(self) -> None:
        self.sio = SocketIOServer(
            async_mode="threading", namespaces=[events.NAMESPACE], max_http_buffer_size=DEFAULT_MAX_HTTP_BUFFER_SIZE
        )
        self._joined: queue.Queue[str] = queue.Queue()
        self.sio.on(events.JOIN_OFFICE, self._join, namespace=events.NAMESPACE)
        self._http = BackgroundHTTPServer(socketio.WSGIApp(self.sio), "127.0.0.1", 0)
        self._http.start()
        self.url = self._http.url
        self.sid: str | None = None

    def _join(self, sid: str, payload: Any) -> tuple[bool, None]:
        self._joined.put(sid)
        return True, None

    def wait_for_join(self) -> None:
        self.sid = self._joined.get(timeout=ASK_TIMEOUT)

    def ask(self, event: str, args: tuple[Any, ...]) -> Any:
        return self.sio.call(event, args, to=self.sid, namespace=events.NAMESPACE, timeout=ASK_TIMEOUT)

    def close(self) -> None:
        self.sio.eio.drop_all_connections()
        self.sio.shutdown()
        self._http.stop_accepting(5)
        self._http.join_connections(5)


def _check(event: str, args: tuple[Any, ...], answer: Any) -> None:
    if coded_error(answer) is not None:
        return
    if event not in ANSWERS:
        assert answer is None  # the cancel notification is acknowledged without a value
        return
    result = from_wire(ANSWERS[event], answer)  # a well-formed answer, or this raises
    sent_req_id = args[0].get("req_id") if args and isinstance(args[0], dict) else None
    assert getattr(result, "req_id", sent_req_id) == sent_req_id


def _fuzz(office: StandInServer, event: str) -> None:
    @FUZZ
    @given(args=malformed_arguments(REQUESTS[event]))
    def fuzz(args: tuple[Any, ...]) -> None:
        _check(event, args, office.ask(event, args))

    fuzz()


@pytest.fixture(scope="module")
def mcp_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The tool and resource test servers over streamable HTTP, shared by the module's
    tests (children of the test run): each test's Computer then starts in a moment."""
    state = tmp_path_factory.mktemp("resources") / "state.json"
    write_state(state, RESOURCES)
    with contextlib.ExitStack() as servers:
        yield {
            "tools": servers.enter_context(http_server(TOOL_SERVER, "--transport", "streamable")),
            "res": servers.enter_context(
                http_server(RESOURCE_SERVER, "--transport", "streamable", "--state", str(state))
            ),
        }


def _start_office(stack: contextlib.ExitStack, mcp_urls: dict[str, str]) -> StandInServer:
    """A real Computer "c1" (tool, resource and completion servers) joined to a stand-in."""
    stand_in = StandInServer()
    stack.callback(stand_in.close)
    servers = [
        {"name": name, "type": "streamable", "server_parameters": {"url": url}} for name, url in mcp_urls.items()
    ]
    completion = tool_server("complete")
    completion["server_parameters"]["args"] = [COMPLETION_SERVER]
    start_computer(stack, "c1", stand_in.url, OFFICE, *servers, completion)
    stand_in.wait_for_join()
    return stand_in


@pytest.fixture
def office(stack: contextlib.ExitStack, mcp_urls: dict[str, str]) -> StandInServer:
    """An office of the test's own: the fuzzing may leave anything behind in it."""
    return _start_office(stack, mcp_urls)


@pytest.fixture(scope="module")
def shared_office(mcp_urls: dict[str, str], no_leaks_in_module: None) -> Iterator[StandInServer]:
    """One office for the module's tests that only ask (a Computer costs seconds to start)."""
    with contextlib.ExitStack() as stack:
        yield _start_office(stack, mcp_urls)


@pytest.mark.timeout(120)
def test_malformed_payloads_of_every_event_get_coded_errors(office, thread_deaths, caplog):
    for event in sorted(REQUESTS):
        _fuzz(office, event)

    assert thread_deaths == []
    assert [r.getMessage()[:300] for r in caplog.records if r.levelno >= logging.ERROR] == []
    # The Computer still serves: a tool call (a new req_id: a cancel of "r" came first,
    # and a cancel that comes first stops its call when it arrives) and a document read.
    call = {**REQUESTS[events.TOOL_CALL], "req_id": "after"}
    echoed = from_wire(CallToolResult, office.ask(events.TOOL_CALL, (call,)))
    assert echoed.text == "x" and not echoed.is_error, echoed
    read = from_wire(ReadResourceRet, office.ask(events.READ_RESOURCE, (REQUESTS[events.READ_RESOURCE],)))
    assert read.req_id == "r" and read.contents[0].uri == "dpe://library/a"


HUGE = "x" * 100_000


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "event, fields",
    [
        pytest.param(events.GET_TOOLS, {"computer": HUGE}, id="computer"),  # _check_addressed
        pytest.param(events.GET_RESOURCES, {"mcp_server": HUGE}, id="mcp_server"),  # ServerManager
        pytest.param(events.READ_RESOURCE, {"uri": HUGE}, id="uri"),  # ResourceRequests._owner
        pytest.param(events.GET_DESKTOP, {"window": "window://" + HUGE + "%"}, id="window"),
    ],
)
def test_a_huge_value_is_not_echoed_back(shared_office, event, fields):
    answer = shared_office.ask(event, ({**REQUESTS[event], **fields},))
    assert coded_error(answer).code in (ErrorCode.BAD_REQUEST, ErrorCode.NOT_FOUND, ErrorCode.MCP_SERVER_NOT_FOUND)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "event, fields, code, mcp_code",
    [
        # the resource server declares no completions: refused before it is asked (4015)
        (events.COMPLETE, {"mcp_server": "res"}, 4015, None),
        # the completion server does not know this template: it answers "invalid params"
        (
            events.COMPLETE,
            {"ref": {"type": "ref/resource", "uri": "dpe://nowhere/{doc_ref}"}, "mcp_server": "complete"},
            400,
            -32602,
        ),
        # reading a window its server does not have: the server answers "resource not found"
        (events.READ_RESOURCE, {"uri": "window://app/other"}, 404, -32002),
    ],
    ids=["no-completions-capability", "invalid-params", "unknown-window"],
)
def test_an_mcp_servers_refusal_is_a_4xx_not_a_500(shared_office, event, fields, code, mcp_code):
    error = coded_error(shared_office.ask(event, ({**REQUESTS[event], **fields},)))
    assert (error.code, error.details.get("mcp_code")) == (code, mcp_code), error
