"""End to end: the real Server (in-thread), the real Computer hosting the stdio test MCP
server (`tests/mcp_servers/tool_server.py`, a child process), and the Agent."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp_servers import TOOL_SERVER, logged_lines
from office_parts import joined_agent
from smcp_sync.connection.session import ReconnectPolicy

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer
from smcp_sync.protocol import events
from smcp_sync.connection.session import NotConnectedError
from smcp_sync.protocol.errors import NotFoundError, SMCPError
from smcp_sync.protocol.models import EnterOfficeNotification, LeaveOfficeNotification, UpdateComputerConfigReq

OFFICE = "office-e2e"
QUICK = ReconnectPolicy(enabled=False)


class Notes:
    """Records notifications, each with the tool names of the first tool-cache update for
    its computer that followed it (a leave has none: it drops the computer). The Agent
    refreshes after the callbacks ran; these tests start no other refresh of that
    computer meanwhile, so that update is the refresh the notification caused."""

    def __init__(self, agent: Agent, *names: str):
        self.seen: list[list] = []  # [name, notification, tool names or None]
        self.changed = threading.Condition()
        for name in names:
            agent.on(name, self._recorder(name))
        agent.on_cache_update(self._cached)

    def _recorder(self, name: str):
        def record(notification) -> None:
            with self.changed:
                self.seen.append([name, notification, None])
                self.changed.notify_all()

        return record

    def _cached(self, kind: str, computer: str, tools) -> None:
        with self.changed:
            for entry in self.seen:
                name, notification, cached = entry
                if kind == "tools" and cached is None and name != events.LEAVE_OFFICE_NOTIFICATION:
                    if getattr(notification, "computer", None) == computer:
                        entry[2] = [t.name for t in tools]
            self.changed.notify_all()

    def wait_for(self, name: str, timeout: float = 20.0) -> tuple[object, list[str] | None]:
        """The first `name` notification and its computer's tools cached after it."""

        def arrived() -> list:
            found = [s for s in self.seen if s[0] == name]
            return found if found and (name == events.LEAVE_OFFICE_NOTIFICATION or found[0][2] is not None) else []

        with self.changed:
            found = self.changed.wait_for(arrived, timeout)
            assert found, f"no {name} (and its refresh) within {timeout}s; seen {self.seen}"
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
        assert {"tools__echo", "tools__add", "tools__fail", "tools__sleep"} <= set(cached)  # refreshed after the callback
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
    echo = next(t for t in tools if t.name == "tools__echo")
    assert echo.bundle_id == "tools"
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
    assert "tools__extra" in cached
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
@pytest.mark.parametrize("each", [25, pytest.param(200, marks=pytest.mark.once)])  # the count adds time, not paths
def test_16_threads_calling_at_once_every_answer_matches_its_request(each, agent, computer):
    mismatches: list[str] = []

    def worker(thread: int) -> None:
        for n in range(each):
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


# -- an interrupted call is cancelled (issue 36) -------------------------------------------


def when_started(logs: dict[str, Path], interrupt) -> threading.Thread:
    """A thread that runs `interrupt()` once the MCP server logged a started tool."""

    def watch() -> None:
        if wait_for_lines(logs["SMCP_TEST_STARTED_LOG"], timeout=50):
            interrupt()

    watcher = threading.Thread(target=watch, name="interrupter")
    watcher.start()
    return watcher


def cancelled_ids(logs: dict[str, Path]) -> list[str]:
    """The MCP request ids the tool server saw cancelled."""
    return [line.split()[1] for line in wait_for_lines(logs["SMCP_TEST_CANCEL_LOG"]) if line.startswith("cancelled")]


@pytest.mark.timeout(90)
def test_a_keyboard_interrupt_of_the_waiting_thread_cancels_the_call(agent, computer, logs):
    sent = threading.Event()

    def interrupt() -> None:  # Ctrl-C, a kernel interrupt
        sent.set()
        os.kill(os.getpid(), signal.SIGINT)

    watcher = when_started(logs, interrupt)
    try:
        agent.call_tool("c1", "sleep", {"seconds": 3600}, timeout=60)
    except KeyboardInterrupt as exc:
        interrupted = exc
    except SMCPError as exc:  # the call's own timeout: say which step did not happen
        watcher.join(10)
        step = "was sent" if sent.is_set() else "was never sent: the MCP server logged no start"
        pytest.fail(f"no KeyboardInterrupt ({exc.code}); SIGINT {step}; its handler {signal.getsignal(signal.SIGINT)!r}")
    watcher.join(10)
    [note] = interrupted.__notes__
    assert note.startswith("smcp_sync: tool call 'sleep' on computer 'c1' (req_id ") and note.endswith("cancel sent")
    assert len(cancelled_ids(logs)) == 1  # the MCP server saw the cancel
    assert agent.call_tool("c1", "echo", {"text": "still here"}, timeout=10).text == "still here"


@pytest.mark.timeout(60)
def test_a_system_exit_from_a_signal_handler_cancels_the_call(agent, computer, logs):
    """gunicorn's sync worker ends a request past its timeout so: SIGABRT, sys.exit(1)."""
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: sys.exit(1))
    try:
        watcher = when_started(logs, lambda: os.kill(os.getpid(), signal.SIGUSR1))
        with pytest.raises(SystemExit) as exited:
            agent.call_tool("c1", "sleep", {"seconds": 3600}, timeout=3600)
        watcher.join(10)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert "cancel sent" in exited.value.__notes__[0]
    assert len(cancelled_ids(logs)) == 1


@pytest.mark.timeout(60)
def test_close_from_another_thread_cancels_the_waiting_and_the_submitted_calls(agent, computer, logs):
    submitted = [agent.submit_tool_call("c1", "sleep", {"seconds": 3600}, timeout=3600) for _ in range(2)]
    watcher = when_started(logs, lambda: wait_until_started(logs, 3) and agent.close())
    with pytest.raises(NotConnectedError) as closed:
        agent.call_tool("c1", "sleep", {"seconds": 3600}, timeout=3600)
    watcher.join(20)
    req_id = closed.value.details["req_id"]
    assert closed.value.details["cancel_sent"] is True and str(closed.value).endswith(f"tool call {req_id}: cancel sent")
    for future in submitted:
        error = future.exception(timeout=10)
        assert isinstance(error, NotConnectedError) and error.details == {"req_id": future.req_id, "cancel_sent": True}
    assert len(logged_lines(logs["SMCP_TEST_CANCEL_LOG"], 3)) == 3  # the MCP server saw each cancel
    called = {req_id, *(future.req_id for future in submitted)}
    assert eventually(lambda: {record.req_id for record in computer.tool_call_history()} == called)


def eventually(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # state of another process, or of the Computer's loop: nothing to wait on
    return True


def wait_until_started(logs: dict[str, Path], count: int) -> bool:
    return len(logged_lines(logs["SMCP_TEST_STARTED_LOG"], count)) >= count
