"""Tool calls: the confirm gate, history, many threads at once, callers that run an
event loop (Jupyter), bad arguments."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer, PendingToolCall, allow_all
from smcp_sync.computer.config.vrl import VRL_TRANSFORMED
from smcp_sync.protocol import ErrorCode
from smcp_sync.computer import ChannelOptions

from ..helpers import FAST, stdio_config, wait_until

pytestmark = pytest.mark.timeout(60)

GATED = stdio_config("tools", tool_meta={"echo": {"auto_apply": True}})


@pytest.fixture(scope="module")
def plain() -> Iterator[Computer]:
    """Every call approved (`allow_all`); shared by tests that leave it as they found it."""
    computer = Computer("plain", [stdio_config("tools")], policy=FAST, confirm=allow_all)
    yield computer.start()
    computer.close()


def test_with_allow_all_every_tool_runs(plain: Computer) -> None:
    assert plain.call_tool("add", {"a": 1, "b": 2}, timeout=10).text == "3"


def test_without_a_confirm_callback_only_auto_apply_tools_run(computer_factory: Any, call_logs: Any) -> None:
    """As the official 0.4.2 Computer: no callback, no unconfirmed call (4005), and the
    MCP server is never asked."""
    computer = computer_factory(stdio_config("tools", env=call_logs.env, tool_meta={"echo": {"auto_apply": True}}), confirm=None)
    refused = computer.call_tool("sleep", {"seconds": 0.0125}, timeout=10)
    assert (refused.is_error, refused.error_code) == (True, ErrorCode.TOOL_REQUIRES_CONFIRMATION)
    assert refused.text == (
        "tool 'tools__sleep' refused (4005): no one confirms tool calls on this Computer;"
        " set auto_apply for the tool or give the Computer a confirm callback"
    )
    assert computer.call_tool("echo", {"text": "hi"}, timeout=10).text == "hi"
    assert not call_logs.started.exists() or "seconds=0.0125" not in call_logs.started.read_text(encoding="utf-8")


def test_confirm_is_asked_unless_auto_apply_and_a_refusal_is_4005(computer_factory: Any) -> None:
    asked: list[PendingToolCall] = []

    def confirm(call: PendingToolCall) -> bool:
        asked.append(call)
        return call.params.get("a") != 666

    computer = computer_factory(GATED, confirm=confirm)
    assert computer.call_tool("echo", {"text": "auto"}, timeout=10).text == "auto"
    assert asked == []  # auto_apply: not asked
    assert computer.call_tool("add", {"a": 1, "b": 2}, timeout=10, req_id="r1").text == "3"
    assert asked == [PendingToolCall(req_id="r1", name="tools__add", server="tools", tool="add", params={"a": 1, "b": 2})]
    refused = computer.call_tool("add", {"a": 666, "b": 0}, timeout=10)
    assert refused.is_error and refused.error_code == ErrorCode.TOOL_REQUIRES_CONFIRMATION
    assert "refused" in refused.text


def test_a_failing_confirm_callback_refuses_without_killing_anything(computer_factory: Any) -> None:
    def confirm(call: PendingToolCall) -> bool:
        raise RuntimeError("no operator")

    computer = computer_factory(GATED, confirm=confirm)
    failed = computer.call_tool("add", {"a": 1, "b": 2}, timeout=10)
    assert failed.error_code == ErrorCode.TOOL_REQUIRES_CONFIRMATION and "no operator" in failed.text
    assert computer.call_tool("echo", {"text": "ok"}, timeout=10).text == "ok"


def test_time_spent_confirming_counts_against_the_timeout(computer_factory: Any) -> None:
    slow_operator = threading.Event()
    computer = computer_factory(GATED, confirm=lambda call: slow_operator.wait(0.6) or True)
    result = computer.call_tool("add", {"a": 1, "b": 2}, timeout=0.5)
    assert result.error_code == ErrorCode.TOOL_TIMEOUT and result.meta["a2c_timeout"] is True


def test_a_confirm_callback_that_never_answers_times_the_call_out_at_its_deadline(computer_factory: Any) -> None:
    operator = threading.Event()
    computer = computer_factory(GATED, confirm=lambda call: operator.wait(30) or True)
    began = time.monotonic()
    result = computer.call_tool("add", {"a": 1, "b": 2}, timeout=0.5)
    waited = time.monotonic() - began
    operator.set()  # the abandoned callback's thread ends
    assert result.error_code == ErrorCode.TOOL_TIMEOUT and result.meta["a2c_timeout"] is True
    assert waited < 10  # the call's 0.5 s, not the callback's 30 s


def test_confirmations_left_unanswered_hold_up_no_other_call(computer_factory: Any) -> None:
    """More unanswered confirm callbacks than anyio's worker threads (40): another call's
    `vrl` script, which runs on a worker thread too, still runs at once."""
    operator, asked = threading.Event(), []

    def confirm(call: PendingToolCall) -> bool:
        asked.append(call.req_id)
        return operator.wait(30)

    config = stdio_config("tools", vrl=".structuredContent.seen = true", tool_meta={"echo": {"auto_apply": True}})
    computer = computer_factory(config, confirm=confirm)
    with concurrent.futures.ThreadPoolExecutor(max_workers=45) as callers:
        waiting = [callers.submit(computer.call_tool, "sleep", {"seconds": 0.01}, 30) for _ in range(45)]
        wait_until(lambda: len(asked) == 45, 20, "45 confirmations asked")
        try:
            result = computer.call_tool("echo", {"text": "hi"}, timeout=10)
        finally:
            operator.set()
        assert [call.result(timeout=30).text for call in waiting] == ["slept 0.01"] * 45
    assert result.text == "hi" and json.loads(result.meta[VRL_TRANSFORMED])["structuredContent"]["seen"] is True


def test_history_keeps_the_last_calls_with_their_outcome(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("tools"), channels=ChannelOptions(history_size=3))
    computer.call_tool("echo", {"text": "1"}, timeout=10, req_id="a")
    computer.call_tool("fail", {"message": "x"}, timeout=10, req_id="b")
    computer.call_tool("sleep", {"seconds": 5}, timeout=0.2, req_id="c")
    computer.call_tool("echo", {"text": "4"}, timeout=10, req_id="d")
    computer.call_tool("unknown", {}, timeout=10, req_id="e")  # never routed: not recorded
    records = computer.tool_call_history()
    assert [(r.req_id, r.server, r.tool, r.ok, r.error_code) for r in records] == [
        ("b", "tools", "tools__fail", False, None),
        ("c", "tools", "tools__sleep", False, ErrorCode.TOOL_TIMEOUT),
        ("d", "tools", "tools__echo", True, None),
    ]
    assert records[0].timestamp <= records[1].timestamp <= records[2].timestamp


def test_many_threads_call_tools_at_once(computer_factory: Any) -> None:
    computer = computer_factory(stdio_config("a"), stdio_config("b", "--prefix", "b_"))

    def call(i: int) -> str:
        tool = "echo" if i % 2 else "b_echo"
        return computer.call_tool(tool, {"text": f"call-{i}"}, timeout=20).text

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(call, range(200)))
    assert results == [f"call-{i}" for i in range(200)]
    assert len(computer.tool_call_history()) == 10


def test_works_from_a_thread_that_runs_an_event_loop(plain: Computer) -> None:
    # a notebook's main thread runs a loop; our calls must not touch it
    async def notebook_cell() -> str:
        return plain.call_tool("echo", {"text": "from a cell"}, timeout=10).text

    assert asyncio.run(notebook_cell()) == "from a cell"


def test_bad_arguments_are_refused_clearly(plain: Computer) -> None:
    with pytest.raises(TypeError, match="params must be a dict"):
        plain.call_tool("echo", ["x"], timeout=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be positive"):
        plain.call_tool("echo", {"text": "x"}, timeout=0)
    # wrong argument types reach the tool, which reports them as a tool error
    result = plain.call_tool("add", {"a": "x", "b": 1}, timeout=10)
    assert result.is_error and "invalid arguments" in result.text


def test_a_cancel_that_arrives_before_its_call_still_cancels_it(plain: Computer) -> None:
    # Socket.IO may hand the two events to their threads in either order
    assert plain.cancel_tool_call("early-1") is False
    result = plain.call_tool("sleep", {"seconds": 30}, timeout=10, req_id="early-1")
    assert result.meta == {"error_code": 4003, "a2c_cancelled": True}
    assert plain.call_tool("echo", {"text": "next"}, timeout=10, req_id="early-1").text == "next"  # remembered once


def test_a_result_carries_its_tools_configured_meta_as_official_computers_do(computer_factory: Any) -> None:
    """`meta.a2c_tool_meta` of a result is the merged ToolMeta as an object, every key
    present (tests/interop/WIRE_NOTES.md: what a2c-smcp 0.4.2 sends); none without one."""
    config = stdio_config(
        "tools",
        default_tool_meta={"tags": ["demo"]},
        tool_meta={"echo": {"auto_apply": True, "ret_object_mapper": {"text": "said"}}},
    )
    computer = computer_factory(config)
    echoed = computer.call_tool("echo", {"text": "hi"}, timeout=10)
    assert echoed.meta is not None
    assert echoed.meta["a2c_tool_meta"] == {
        "auto_apply": True,
        "alias": None,
        "tags": ["demo"],
        "ret_object_mapper": {"text": "said"},
    }
    added = computer.call_tool("add", {"a": 1, "b": 2}, timeout=10)
    assert added.text == "3" and added.meta is not None
    assert added.meta["a2c_tool_meta"] == {"auto_apply": None, "alias": None, "tags": ["demo"], "ret_object_mapper": None}


def test_a_result_of_a_tool_without_configured_meta_has_no_tool_meta(plain: Computer) -> None:
    result = plain.call_tool("add", {"a": 1, "b": 2}, timeout=10)
    assert "a2c_tool_meta" not in (result.meta or {})
