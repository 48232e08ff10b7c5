"""MCP servers come and go; the Computer stays: crashes, failed starts, restarts with
backoff, tool-list changes, runtime configuration, noisy stderr."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from typing import Any

import psutil
import pytest

from smcp_sync.computer import Computer, ServerState, ServersNotStartedError, allow_all
from smcp_sync.protocol import CallToolResult, ErrorCode

from ..helpers import (
    FAST,
    TOOL_SERVER,
    CallLogs,
    EventLog,
    http_config,
    start_http_server,
    stdio_config,
    stop,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)


def _names(computer: Computer) -> list[str]:
    """The bare tool names (exposed names without their ``{bundle_id}__``)."""
    return [tool.name.removeprefix(f"{tool.bundle_id}__") for tool in computer.tools()]


def _child_pids() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


def test_killing_the_stdio_child_mid_call_fails_the_call_then_the_server_comes_back(
    computer_factory: Any, call_logs: CallLogs
) -> None:
    events = EventLog()
    computer = computer_factory(stdio_config("victim", env=call_logs.env), stdio_config("bystander", "--prefix", "b_"))
    computer.add_listener(events)
    results: list[CallToolResult] = []
    caller = threading.Thread(target=lambda: results.append(computer.call_tool("sleep", {"seconds": 50.5}, timeout=20)))
    caller.start()
    call_logs.wait_started(50.5)
    child = _server_process(call_logs)
    started = time.monotonic()
    child.kill()
    caller.join(10)
    assert time.monotonic() - started < 5.0, "the call must fail promptly, not wait out its timeout"
    [result] = results
    assert result.is_error and result.error_code == ErrorCode.TOOL_EXECUTION_FAILED
    assert "closed" in result.text

    # its tools disappear meanwhile (the bystander's stay), then come back
    events.wait_for(lambda e: e.server == "victim" and e.kind == "disconnected")
    events.wait_for(lambda e: e.server == "victim" and e.kind == "connected" and e.status.generation == 2)
    assert computer.servers.statuses()[0].state is ServerState.RUNNING
    assert "echo" in _names(computer) and "b_echo" in _names(computer)
    assert computer.call_tool("echo", {"text": "back"}, timeout=10).text == "back"
    assert computer.call_tool("b_echo", {"text": "untouched"}, timeout=10).text == "untouched"
    assert "disconnected" not in events.kinds("bystander")  # the bystander never went down


def _server_process(call_logs: CallLogs) -> psutil.Process:
    """The tool_server child whose `sleep` started (found by its open log file's env)."""
    for child in psutil.Process().children(recursive=True):
        try:
            if child.environ().get("SMCP_TEST_STARTED_LOG") == str(call_logs.started):
                return child
        except psutil.Error:
            continue
    raise AssertionError("no tool_server child with the call log in its environment")


def test_a_server_that_crashes_by_itself_is_restarted_and_its_tools_return(computer_factory: Any) -> None:
    events = EventLog()
    computer = computer_factory(stdio_config("tools"))
    computer.add_listener(events)
    crashed = computer.call_tool("crash", {}, timeout=10)
    assert crashed.is_error and crashed.error_code == ErrorCode.TOOL_EXECUTION_FAILED
    gone = events.wait_for(lambda e: e.kind == "disconnected")
    assert gone.status.state is ServerState.RESTARTING and "process exited" in gone.status.error
    back = events.wait_for(lambda e: e.kind == "connected" and e.status.generation == 2)
    assert back.status.error is None
    assert computer.call_tool("add", {"a": 1, "b": 2}, timeout=10).text == "3"


def test_a_call_to_a_restarting_servers_tool_is_4003_not_unknown(computer_factory: Any, tmp_path: Any) -> None:
    # a server that dies on every start after the first: stays "restarting"
    flag = tmp_path / "started-once"
    wrapper = tmp_path / "flaky.py"
    wrapper.write_text(
        "import os, sys, runpy\n"
        f"flag = {str(flag)!r}\n"
        "if os.path.exists(flag): sys.exit(7)\n"
        "open(flag, 'w').close()\n"
        f"sys.argv = [{TOOL_SERVER!r}]\n"
        f"runpy.run_path({TOOL_SERVER!r}, run_name='__main__')\n"
    )
    events = EventLog()
    computer = computer_factory(
        {"name": "flaky", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [str(wrapper)]}}
    )
    computer.add_listener(events)
    assert "echo" in _names(computer)
    computer.call_tool("crash", {}, timeout=10)
    events.wait_for(lambda e: e.kind == "disconnected")
    assert "echo" not in _names(computer)
    result = computer.call_tool("echo", {"text": "x"}, timeout=5)
    assert result.error_code == ErrorCode.TOOL_EXECUTION_FAILED and "restarting" in result.text
    assert computer.call_tool("no_such_tool", {}, timeout=5).error_code == ErrorCode.TOOL_NOT_FOUND
    diagnostics = computer.diagnostics()
    assert any("'flaky' is restarting" in d for d in diagnostics)


def test_a_server_that_cannot_start_does_not_take_the_computer_down(computer_factory: Any) -> None:
    broken = {"name": "broken", "type": "stdio", "server_parameters": {"command": "/nonexistent/mcp-server"}}
    refused = {"name": "refused", "type": "streamable", "server_parameters": {"url": "http://127.0.0.1:9/mcp"}}
    computer = computer_factory(broken, refused, stdio_config("good"))
    states = {s.name: s for s in computer.servers.statuses()}
    assert states["good"].state is ServerState.RUNNING
    assert states["broken"].state is ServerState.RESTARTING
    assert "No such file or directory" in states["broken"].error and "/nonexistent" not in states["broken"].error
    assert states["refused"].state is ServerState.RESTARTING
    assert computer.call_tool("echo", {"text": "fine"}, timeout=10).text == "fine"
    # still retrying, with backoff (not a busy loop)
    assert computer.servers.status("broken").state is ServerState.RESTARTING


@pytest.mark.parametrize("transport", ["sse", "streamable"])
def test_an_http_server_that_goes_away_is_retried_until_it_is_back(computer_factory: Any, transport: str) -> None:
    events = EventLog()
    proc, url = start_http_server(TOOL_SERVER, "--transport", transport, stderr=subprocess.DEVNULL)
    try:
        computer = computer_factory(http_config("remote", transport, url))
        computer.add_listener(events)
        assert computer.call_tool("echo", {"text": "1"}, timeout=10).text == "1"
        stop(proc)
        failed = computer.call_tool("echo", {"text": "2"}, timeout=10)  # fails at once, not after 10 s
        assert failed.error_code == ErrorCode.TOOL_EXECUTION_FAILED
        events.wait_for(lambda e: e.kind == "disconnected")
        port = url.rsplit(":", 1)[1].split("/")[0]
        proc, _ = start_http_server(TOOL_SERVER, "--transport", transport, "--port", port, stderr=subprocess.DEVNULL)
        events.wait_for(lambda e: e.kind == "connected" and e.status.generation == 2, timeout=20)
        assert computer.call_tool("echo", {"text": "3"}, timeout=10).text == "3"
    finally:
        stop(proc)


def test_tools_list_changed_refreshes_the_list_and_emits_an_event(computer_factory: Any) -> None:
    events = EventLog()
    computer = computer_factory(stdio_config("tools"))
    computer.add_listener(events)
    assert computer.call_tool("add_tool", {"name": "dynamic"}, timeout=10).text == "added dynamic"
    events.wait_for(lambda e: e.kind == "tools_changed")
    wait_until(lambda: "dynamic" in _names(computer), what="the new tool in the list")
    assert computer.call_tool("dynamic", {"x": 1}, timeout=10).text == 'dynamic called with {"x": 1}'
    computer.call_tool("remove_tool", {"name": "dynamic"}, timeout=10)
    wait_until(lambda: "dynamic" not in _names(computer), what="the tool gone from the list")
    assert computer.call_tool("dynamic", {}, timeout=5).error_code == ErrorCode.TOOL_NOT_FOUND


def test_servers_are_added_updated_and_removed_at_runtime(computer_factory: Any) -> None:
    events = EventLog()
    computer = computer_factory(stdio_config("first"))
    computer.add_listener(events)
    status = computer.servers.add(stdio_config("second", "--prefix", "s_"))
    assert status.state is ServerState.RUNNING
    assert _names(computer)[:1] == ["echo"] and "s_echo" in _names(computer)
    # update: same bundle_id, new config (a prefix) -> restarted with it, keeps its place
    computer.servers.add(stdio_config("first", "--prefix", "f_"))
    assert _names(computer)[0] == "f_echo" and "echo" not in _names(computer)
    assert [s.name for s in computer.servers.statuses()] == ["first", "second"]
    computer.servers.remove("first")
    assert all(name.startswith("s_") for name in _names(computer))
    assert [s.name for s in computer.servers.statuses()] == ["second"]
    assert events.wait_for(lambda e: e.kind == "config_changed" and e.server == "first")


def test_disabled_servers_are_not_started_and_cannot_be(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("off", disabled=True), stdio_config("on", "--prefix", "on_"))
    off = computer.servers.status("off")
    assert off.state is ServerState.DISABLED and off.generation == 0
    assert all(name.startswith("on_") for name in _names(computer))
    with pytest.raises(Exception, match="disabled"):
        computer.servers.start("off")


def test_start_stop_restart_one_server(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("a"), stdio_config("b", "--prefix", "b_"))
    pids_before = _child_pids()
    stopped = computer.servers.stop("a")
    assert stopped.state is ServerState.STOPPED
    assert not any(name in _names(computer) for name in ("echo", "add"))
    assert len(_child_pids()) == len(pids_before) - 1  # its child is gone
    assert computer.call_tool("echo", {}, timeout=5).error_code == ErrorCode.TOOL_NOT_FOUND
    assert computer.servers.start("a").state is ServerState.RUNNING
    assert "echo" in _names(computer)
    restarted = computer.servers.restart("b")
    assert restarted.state is ServerState.RUNNING and restarted.generation == 2
    assert computer.call_tool("b_add", {"a": 2, "b": 2}, timeout=10).text == "4"


def test_heavy_stderr_never_blocks_the_server(computer_factory: Any) -> None:
    # 256 KB at startup and on every call: far beyond a pipe buffer (64 KB)
    computer = computer_factory(stdio_config("noisy", "--noisy-stderr", "256"))
    for i in range(5):
        assert computer.call_tool("echo", {"text": str(i)}, timeout=10).text == str(i)


def test_every_stderr_line_reaches_the_debug_log_also_those_written_while_the_drain_pauses(
    computer_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # one 1 KB line at startup and one per call, each read after a pause (stderr_pipe.QUIET_PAUSE)
    caplog.set_level(logging.DEBUG, logger="smcp_sync.computer.mcp.stderr_pipe")
    computer = computer_factory(stdio_config("chatty", "--noisy-stderr", "1"))
    for i in range(5):
        assert computer.call_tool("echo", {"text": str(i)}, timeout=10).text == str(i)

    def noise() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and r.getMessage().startswith("noise ")]

    wait_until(lambda: len(noise()) >= 6, what="six stderr lines logged")
    assert len(noise()) == 6 and all(line == "noise " + "x" * 1017 for line in noise())


def test_closing_while_a_server_is_still_starting_does_not_hang(no_leaks: None) -> None:
    # a child that never answers initialize (and ignores its closed stdin)
    mute = {"name": "mute", "type": "stdio", "server_parameters": {
        "command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}}
    computer = Computer("closing", [mute], policy=FAST, confirm=allow_all)
    computer.start(timeout=0.3)  # returns; the server keeps starting in the background
    assert computer.servers.status("mute").state is ServerState.STARTING
    started = time.monotonic()
    computer.close()
    assert time.monotonic() - started < 8.0  # stdin closed, then SIGTERM: never the 20 s init timeout


def test_close_leaves_no_thread_or_child_process_behind(no_leaks: None) -> None:
    # no_leaks checks threads and children after the test body
    computer = Computer("closing", [stdio_config("a"), stdio_config("b", "--prefix", "b_")], confirm=allow_all).start()
    assert len(computer.tools()) == 22  # the test tool server's 11 tools, twice
    computer.call_tool("sleep", {"seconds": 0.01}, timeout=5)
    computer.close()
    computer.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        computer.call_tool("echo", {"text": "x"}, timeout=5)


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def test_a_missing_command_is_a_warning_naming_the_command_and_the_os_error(
    computer_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smcp_sync")
    computer_factory({"name": "typo", "type": "stdio", "server_parameters": {"command": "/nonexistent/mcp-servr"}})
    [warning, *_] = _warnings(caplog, "'typo' failed to start")
    assert "(command '/nonexistent/mcp-servr')" in warning and "No such file or directory" in warning


def test_start_require_all_raises_naming_the_servers_that_did_not_start(computer_factory: Any) -> None:
    broken = {"name": "broken", "type": "stdio", "server_parameters": {"command": "/nonexistent/mcp-server"}}
    computer = computer_factory(broken, stdio_config("good"), start=False)
    with pytest.raises(ServersNotStartedError, match=r"1 MCP server\(s\) did not start: 'broken': .*No such file") as failed:
        computer.start(require_all=True)
    assert [s.bundle_id for s in failed.value.statuses] == ["broken"]
    assert computer_factory(stdio_config("fine")).start(require_all=True).tools()  # all up: no error


def test_restarts_are_logged_and_the_stderr_lines_shown_are_the_last_attempts_only(
    computer_factory: Any, caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    caplog.set_level(logging.INFO, logger="smcp_sync")
    counter = tmp_path / "attempts"
    failing = tmp_path / "failing.py"
    failing.write_text(
        "import pathlib, sys\n"
        f"counter = pathlib.Path({str(counter)!r})\n"
        "n = int(counter.read_text()) + 1 if counter.exists() else 1\n"
        "counter.write_text(str(n))\n"
        "print(f'attempt {n} failed', file=sys.stderr, flush=True)\n"
        "sys.exit(1)\n"
    )
    computer_factory({"name": "failing", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [str(failing)]}})
    wait_until(lambda: len(_warnings(caplog, "'failing' failed to start")) >= 3, what="three failed attempts")
    first, second, third = _warnings(caplog, "'failing' failed to start")[:3]
    assert "attempt 1 failed" in first and "attempt 2 failed" in second and "attempt 3 failed" in third
    assert "attempt 1" not in second and "attempt 1" not in third and "attempt 2" not in third

    caplog.clear()
    crashing = computer_factory(stdio_config("tools"), name="other")
    crashing.call_tool("crash", {}, timeout=10)
    wait_until(lambda: any("'tools' is back up" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records))
    assert _warnings(caplog, "'tools' went down")
