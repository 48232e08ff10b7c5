"""A tool call's timeout may be larger than any wait a thread can make
(`threading.TIMEOUT_MAX`, or infinite): the call runs, and is still cancelled on
request, its MCP request too (a real tool server logs the cancellation)."""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest

from ..helpers import CallLogs, stdio_config


@pytest.mark.parametrize(("timeout", "seconds"), [(threading.TIMEOUT_MAX * 2, 41.5), (math.inf, 42.5)])
def test_a_timeout_beyond_what_a_thread_can_wait_runs_the_call_and_it_can_be_cancelled(
    computer_factory: Any, call_logs: CallLogs, timeout: float, seconds: float
) -> None:
    computer = computer_factory(stdio_config("tools", env=call_logs.env))
    assert computer.call_tool("echo", {"text": "hi"}, timeout=timeout).text == "hi"

    def cancel_once_started() -> None:
        call_logs.wait_started(seconds)
        computer.cancel_tool_call(f"huge-{seconds}")

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        result = computer.call_tool("sleep", {"seconds": seconds}, timeout=timeout, req_id=f"huge-{seconds}")
    finally:
        canceller.join(20)
    assert result.meta == {"error_code": 4003, "a2c_cancelled": True}
    call_logs.wait_cancelled(seconds)
