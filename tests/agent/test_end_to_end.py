"""End to end: the real Server (in-thread), the real Computer hosting the stdio test MCP
server (`tests/mcp_servers/tool_server.py`, a child process), and the Agent."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer
from smcp_sync.connection import ReconnectPolicy
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import NotFoundError
from smcp_sync.protocol.models import EnterOfficeNotification, LeaveOfficeNotification, UpdateComputerConfigReq

from mcp_servers import TOOL_SERVER
from office_parts import joined_agent

OFFICE = "office-e2e"
QUICK = ReconnectPolicy(enabled=False)


class Notes:
    """Records notifications with the tool names the Agent had cached when each arrived."""

    def __init__(self, agent: Agent, *names: str):
        self.agent = agent
        self.seen: list[tuple[str, object, list[str] | None]] = []
        self.changed = threading.Condition()
        for name in names:
            agent.on(name, self._recorder(name))

    def _recorder(self, name: str):
        def record(notification) -> None:
            computer = getattr(notification, "computer", None)
            cached = self.agent.tool_cache.get(computer) if computer else None
            with self.changed:
                self.seen.append((name, notification, [t.name for t in cached] if cached is not None else None))
                self.changed.notify_all()

        return record

    def wait_for(self, name: str, timeout: float = 20.0) -> tuple[object, list[str] | None]:
        with self.changed:
            found = self.changed.wait_for(lambda: [s for s in self.seen if s[0] == name], timeout)
            assert found, f"no {name} within {timeout}s; seen {self.seen}"
            _, notification, cached = found[0]
            return notification, cached


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    return {"SMCP_TEST_STARTED_LOG": tmp_path / "started.log", "SMCP_TEST_CANCEL_LOG": tmp_path / "cancelled.log"}


@pytest.fixture
def agent(server):
    with joined_agent("a1", server.url, OFFICE, timeout=10, reconnect=QUICK) as joined:
        yield joined


def make_computer(name: str, logs: dict[str, Path]) -> Computer:
    config = {
        "name": "tools",
        "type": "stdio",
        "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER], "env": {k: str(v) for k, v in logs.items()}},
        "default_tool_meta": {"auto_apply": True},
    }
    return Computer(name, servers=[config], reconnect=QUICK)


@pytest.fixture
def computer(server, agent, logs):
    notes = Notes(agent, events.ENTER_OFFICE_NOTIFICATION)
    with make_computer("c1", logs) as real:
        real.connect(server.url, OFFICE, timeout=20)
        notification, cached = notes.wait_for(events.ENTER_OFFICE_NOTIFICATION)
        assert notification == EnterOfficeNotification(office_id=OFFICE, computer="c1")
        assert {"echo", "add", "fail", "sleep"} <= set(cached)  # refreshed before the callback ran
        yield real


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for_lines(path: Path, timeout: float = 10.0) -> list[str]:
    """The lines the MCP server (another process) logged to `path`, once there are some."""
    deadline = time.monotonic() + timeout
    while not _lines(path) and time.monotonic() < deadline:
        time.sleep(0.05)  # a file written by another process: nothing to wait on but the file
    return _lines(path)


@pytest.mark.timeout(60)
def test_tools_and_tool_calls_through_the_whole_chain(agent, computer):
    tools = agent.get_tools("c1", timeout=10)
    assert [t.name for t in tools] == [t.name for t in computer.tools()]
    echo = next(t for t in tools if t.name == "echo")
    assert echo.params_schema["properties"]["text"]["type"] == "string" and echo.tool_meta.auto_apply is True

    ok = agent.call_tool("c1", "echo", {"text": "hi"}, timeout=10)
    assert not ok.is_error and ok.text == "hi" and ok.structured_content == {"result": "hi"}
    assert agent.call_tool("c1", "add", {"a": 2, "b": 40}, timeout=10).text == "42"

    failed = agent.call_tool("c1", "fail", {"message": "boom"}, timeout=10)
    assert failed.is_error and "boom" in failed.text

    unknown = agent.call_tool("c1", "nope", {}, timeout=10)
    assert unknown.is_error and unknown.error_code == 4001

    config = agent.get_config("c1", timeout=10)
    assert list(config.servers) == ["tools"] and config.servers["tools"].server_parameters.args == [TOOL_SERVER]


@pytest.mark.timeout(60)
def test_a_tool_timeout_is_a_4004_result_and_the_mcp_call_is_cancelled(agent, computer, logs):
    started = time.monotonic()
    result = agent.call_tool("c1", "sleep", {"seconds": 30}, timeout=1)
    assert time.monotonic() - started < 4  # the Computer's own timeout, well before the Agent's
    assert result.is_error and result.error_code == 4004 and result.meta["a2c_timeout"] is True

    assert [line.split()[0] for line in wait_for_lines(logs["SMCP_TEST_CANCEL_LOG"])] == ["cancelled"]


@pytest.mark.timeout(60)
def test_cancel_tool_call_reaches_the_mcp_server(agent, computer, logs):
    future = agent.submit_tool_call("c1", "sleep", {"seconds": 30}, timeout=40)
    assert wait_for_lines(logs["SMCP_TEST_STARTED_LOG"]), "the MCP server never started the tool"
    agent.cancel_tool_call(future.req_id)

    result = future.result(timeout=10)
    assert result.is_error and result.meta["a2c_cancelled"] is True
    assert [line.split()[0] for line in wait_for_lines(logs["SMCP_TEST_CANCEL_LOG"])] == ["cancelled"]


@pytest.mark.timeout(60)
def test_unknown_computer_other_office_and_list_room(server, agent, computer, logs):
    with make_computer("c9", logs) as elsewhere:
        elsewhere.connect(server.url, "office-other", timeout=20)
        for name in ("nobody", "c9"):
            with pytest.raises(NotFoundError) as missing:
                agent.call_tool(name, "echo", {"text": "x"}, timeout=10)
            assert missing.value.code == 404
        sessions = agent.list_room(timeout=10)
        assert {(s.name, s.role) for s in sessions} == {("a1", "agent"), ("c1", "computer")}
        assert elsewhere.tool_call_history() == ()


@pytest.mark.timeout(60)
def test_update_tool_list_after_the_mcp_server_changes_its_tools(agent, computer):
    notes = Notes(agent, events.UPDATE_TOOL_LIST_NOTIFICATION)
    assert agent.call_tool("c1", "add_tool", {"name": "extra"}, timeout=10).is_error is False

    notification, cached = notes.wait_for(events.UPDATE_TOOL_LIST_NOTIFICATION)
    assert notification == UpdateComputerConfigReq(computer="c1")
    assert "extra" in cached
    assert agent.call_tool("c1", "extra", {"x": 1}, timeout=10).text.startswith("extra called with")


@pytest.mark.timeout(60)
def test_leave_and_disconnect_notifications(server, agent, computer, logs):
    notes = Notes(agent, events.LEAVE_OFFICE_NOTIFICATION, events.ENTER_OFFICE_NOTIFICATION)
    computer.disconnect()
    notification, cached = notes.wait_for(events.LEAVE_OFFICE_NOTIFICATION)
    assert notification == LeaveOfficeNotification(office_id=OFFICE, computer="c1") and cached is None

    with make_computer("c2", logs) as second:
        second.connect(server.url, OFFICE, timeout=20)
        notes.wait_for(events.ENTER_OFFICE_NOTIFICATION)
        assert "c2" in agent.tool_cache
    with notes.changed:  # closing the Computer disconnects it: a leave for c2
        assert notes.changed.wait_for(
            lambda: any(n == LeaveOfficeNotification(office_id=OFFICE, computer="c2") for _, n, _ in notes.seen), 20
        )
    assert agent.tool_cache.computers() == []


@pytest.mark.timeout(120)
def test_16_threads_200_calls_each_every_answer_matches_its_request(agent, computer):
    mismatches: list[str] = []

    def worker(thread: int) -> None:
        for n in range(200):
            text = f"{thread}-{n}"
            result = agent.call_tool("c1", "echo", {"text": text}, timeout=30)
            if result.is_error or result.text != text:
                mismatches.append(f"{text} -> {result.text!r}")

    workers = [threading.Thread(target=worker, args=(t,), name=f"caller-{t}") for t in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(100)
    assert not any(w.is_alive() for w in workers)
    assert mismatches == []
