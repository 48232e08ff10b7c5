"""The Computer in an office: a real SMCPServer on loopback, an agent (the shared
`Connection`), and the Computer answering `client:*`, obeying cancels, announcing changes,
re-joining after a dropped connection."""

from __future__ import annotations

import itertools
import queue
import threading
import time
import uuid
from typing import Any, Iterator

import pytest
import socketio
from smcp_sync.connection.session import Connection, ReconnectPolicy

from smcp_sync.computer import REDACTED, Computer
from smcp_sync.protocol import (
    AuthError,
    CallToolResult,
    ErrorCode,
    GetComputerConfigRet,
    GetToolsRet,
    SMCPError,
    events,
    from_wire,
)
from smcp_sync.server import SMCPServer
from smcp_sync.server.transport.background_http import BackgroundHTTPServer
from smcp_sync.server.transport.engine import SocketIOServer

from .helpers import FAST, CallLogs, stdio_config, wait_until

pytestmark = pytest.mark.timeout(60)

OFFICE = "office-1"
FAST_RECONNECT = ReconnectPolicy(delay=0.1, delay_max=0.5, randomization=0.0)


class Agent:
    """A minimal agent: the shared Connection, plus the notifications it receives."""

    def __init__(self, url: str) -> None:
        self.connection = Connection("agent", "a1", reconnect=FAST_RECONNECT)
        self.notifications: queue.Queue[tuple[str, Any]] = queue.Queue()
        for event in events.NOTIFY_EVENTS:
            self.connection.on(event, lambda payload, event=event: self.notifications.put((event, payload)))
        self.connection.connect(url, timeout=5)
        self.connection.join_office(OFFICE, timeout=5)

    def request(self, event: str, wait: float = 20, **fields: Any) -> Any:
        """`fields` complete the payload (a tool call's own `timeout` among them)."""
        payload = {"agent": "a1", "req_id": fields.pop("req_id", uuid.uuid4().hex), "computer": "c1", **fields}
        return self.connection.call(event, payload, wait)

    def wait_notification(self, event: str, timeout: float = 10) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            name, payload = self.notifications.get(timeout=max(0.0, deadline - time.monotonic()))
            if name == event:
                return payload


@pytest.fixture
def server(no_leaks: None) -> Iterator[SMCPServer]:
    server = SMCPServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def agent(server: SMCPServer) -> Iterator[Agent]:
    agent = Agent(server.url)
    yield agent
    agent.connection.close()


@pytest.fixture
def computer(server: SMCPServer, computer_factory: Any, call_logs: CallLogs) -> Computer:
    computer = computer_factory(
        stdio_config("tools", env=call_logs.env, tool_meta={"echo": {"auto_apply": True}}),
        name="c1",
        reconnect=FAST_RECONNECT,
    )
    computer.connect(server.url, OFFICE)
    return computer


def test_an_agent_lists_and_calls_tools_through_the_server(computer: Computer, agent: Agent) -> None:
    tools = from_wire(GetToolsRet, agent.request(events.GET_TOOLS, req_id="t1"))
    assert tools.req_id == "t1" and tools.tools == computer.tools()
    answer = agent.request(events.TOOL_CALL, tool_name="echo", params={"text": "over the wire"}, timeout=10)
    result = from_wire(CallToolResult, answer)
    assert (result.text, result.structured_content) == ("over the wire", {"result": "over the wire"})
    unknown = from_wire(CallToolResult, agent.request(events.TOOL_CALL, tool_name="nope", params={}, timeout=10))
    assert unknown.is_error and unknown.error_code == ErrorCode.TOOL_NOT_FOUND


def test_get_config_over_the_wire_is_redacted(server: SMCPServer, computer_factory: Any, agent: Agent) -> None:
    config = stdio_config("tools", env={"API_KEY": "top-secret"})
    computer = computer_factory(config, name="c1")
    computer.connect(server.url, OFFICE)
    answer = agent.request(events.GET_CONFIG)
    assert "top-secret" not in str(answer)
    shown = from_wire(GetComputerConfigRet, answer)
    assert shown.servers["tools"].server_parameters.env == {"API_KEY": REDACTED}


def test_the_agents_cancel_stops_the_call(computer: Computer, agent: Agent, call_logs: CallLogs) -> None:
    answers: list[Any] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            agent.request(events.TOOL_CALL, req_id="long-1", tool_name="sleep", params={"seconds": 60.5}, timeout=30)
        )
    )
    caller.start()
    call_logs.wait_started(60.5)
    agent.connection.emit(events.CANCEL_TOOL_CALL, {"agent": "a1", "req_id": "long-1"})
    caller.join(10)
    result = from_wire(CallToolResult, answers[0])
    assert result.is_error and result.meta == {"error_code": 4003, "a2c_cancelled": True}
    call_logs.wait_cancelled(60.5)


def test_tool_and_config_changes_are_announced(computer: Computer, agent: Agent) -> None:
    agent.request(events.TOOL_CALL, tool_name="add_tool", params={"name": "fresh"}, timeout=10)
    assert agent.wait_notification(events.UPDATE_TOOL_LIST_NOTIFICATION) == {"computer": "c1"}
    tools = from_wire(GetToolsRet, agent.request(events.GET_TOOLS)).tools
    assert "tools__fresh" in [t.name for t in tools]
    computer.servers.add(stdio_config("more", "--prefix", "m_"))
    assert agent.wait_notification(events.UPDATE_CONFIG_NOTIFICATION) == {"computer": "c1"}
    assert agent.wait_notification(events.UPDATE_TOOL_LIST_NOTIFICATION) == {"computer": "c1"}


def test_after_a_dropped_connection_the_computer_rejoins_by_itself(
    server: SMCPServer, computer: Computer, agent: Agent
) -> None:
    server.drop_connections()  # every client sees a lost transport
    deadline = time.monotonic() + 15
    while True:  # the agent re-joins too; retry until the Computer is back in the office
        try:
            answer = agent.request(events.TOOL_CALL, tool_name="echo", params={"text": "again"}, timeout=5)
            break
        except SMCPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert from_wire(CallToolResult, answer).text == "again"


def test_a_refused_join_raises_and_leaves_nothing_connected(
    server: SMCPServer, computer: Computer, computer_factory: Any
) -> None:
    twin = computer_factory(name="c1")  # same name, same office
    with pytest.raises(SMCPError, match="a computer named 'c1' is already in office"):
        twin.connect(server.url, OFFICE)
    twin.disconnect()  # nothing to do, and no error


def test_authentication_is_passed_and_a_refusal_is_clear(computer_factory: Any, no_leaks: None) -> None:
    with SMCPServer(auth="k3y") as guarded:
        url = guarded.start()
        computer = computer_factory(name="c1")
        with pytest.raises(AuthError):
            computer.connect(url, OFFICE, auth={"api_key": "wrong"})
        computer.connect(url, OFFICE, auth={"api_key": "k3y"})
        computer.disconnect()


def test_bad_requests_get_a_400_naming_the_field(computer_factory: Any, no_leaks: None) -> None:
    """A raw Socket.IO server sends what an SMCPServer would refuse before routing."""
    raw = SocketIOServer(async_mode="threading", namespaces=[events.NAMESPACE])  # stoppable ping threads
    joined: queue.Queue[str] = queue.Queue()
    raw.on(events.JOIN_OFFICE, lambda sid, data: joined.put(sid) or (True, None), namespace=events.NAMESPACE)
    http = BackgroundHTTPServer(socketio.WSGIApp(raw), "127.0.0.1", 0)
    http.start()
    try:
        computer = computer_factory(stdio_config("tools"), name="c1", policy=FAST)
        computer.connect(http.url, OFFICE)
        sid = joined.get(timeout=5)

        def ask(event: str, payload: Any) -> Any:
            return raw.call(event, payload, to=sid, namespace=events.NAMESPACE, timeout=10)

        base = {"agent": "a1", "req_id": "r", "computer": "c1"}
        missing = ask(events.TOOL_CALL, {**base, "params": {}, "timeout": 5})
        assert missing["code"] == 400 and "$.tool_name" in missing["message"]
        negative = ask(events.TOOL_CALL, {**base, "tool_name": "echo", "params": {}, "timeout": -1})
        assert negative["code"] == 400 and "$.timeout" in negative["message"]
        wrong_type = ask(events.TOOL_CALL, {**base, "tool_name": "echo", "params": [], "timeout": 5})
        assert wrong_type["code"] == 400 and "$.params" in wrong_type["message"]
        elsewhere = ask(events.GET_TOOLS, {**base, "computer": "c2"})
        assert elsewhere["code"] == 404
        assert ask(events.GET_TOOLS, "not an object")["code"] == 400
        # the handler threads survived: a good request still works
        good = ask(events.TOOL_CALL, {**base, "tool_name": "echo", "params": {"text": "ok"}, "timeout": 5})
        assert good["content"][0]["text"] == "ok"
        computer.disconnect()
    finally:
        raw.eio.drop_all_connections()
        raw.shutdown()
        http.stop_accepting(5)
        http.join_connections(5)


def test_requests_racing_the_computers_close_are_answered_not_logged_as_crashes(
    computer: Computer, agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    """An Agent asking for skills and windows while the Computer closes gets them, a 500
    that says the Computer is closed or not running, or a 404 once it has left; no handler
    'fails' (an ERROR with a traceback: what the demo printed at SIGTERM in CI, for
    client:get_skills)."""
    answers: list[Any] = []
    stop = threading.Event()

    def ask() -> None:
        for event in itertools.cycle((events.GET_SKILLS, events.GET_DESKTOP)):
            if stop.is_set():
                return
            try:
                answers.append(agent.request(event, wait=5))
            except Exception as exc:  # a timeout or a dropped connection ends the race too
                answers.append(exc)
                return

    asker = threading.Thread(target=ask)
    with caplog.at_level("INFO", logger="smcp_sync"):
        asker.start()
        wait_until(lambda: len(answers) >= 3, timeout=10)
        computer.close()
        stop.set()
        asker.join(10)
    crashes = [r for r in caplog.records if r.levelname == "ERROR" and "failed" in r.getMessage()]
    assert crashes == []
    for answer in answers:
        if isinstance(answer, dict) and "code" in answer:
            assert answer["code"] in (ErrorCode.INTERNAL_ERROR, ErrorCode.NOT_FOUND), answer
            if answer["code"] == ErrorCode.INTERNAL_ERROR:
                assert "closed" in answer["message"] or "not running" in answer["message"], answer
        elif isinstance(answer, dict):
            assert "skills" in answer or "desktops" in answer, answer
