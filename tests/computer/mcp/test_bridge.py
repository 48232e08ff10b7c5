"""The Computer's event loop thread (computer/mcp/bridge.py): what `run` raises tells a
wait that ran out from a coroutine's own outcome, on every interpreter (on 3.11+
`concurrent.futures.TimeoutError` is the builtin `TimeoutError`)."""

from __future__ import annotations

import threading

import anyio
import pytest

from smcp_sync.computer.mcp.bridge import EventLoopThread


@pytest.fixture
def bridge():
    loop = EventLoopThread("test")
    loop.start()
    yield loop
    loop.stop()
    assert not any(t.name == "smcp-computer-loop[test]" for t in threading.enumerate())


def test_a_coroutines_own_timeout_error_reaches_the_caller_as_it_is(bridge: EventLoopThread) -> None:
    async def refuse() -> None:
        raise TimeoutError("the MCP server's own deadline")

    with pytest.raises(TimeoutError, match="the MCP server's own deadline"):
        bridge.run(refuse(), timeout=5)


def test_a_wait_that_runs_out_cancels_the_coroutine_and_says_so(bridge: EventLoopThread) -> None:
    cancelled = threading.Event()

    async def hang() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    with pytest.raises(TimeoutError, match="no result within 0.2s"):
        bridge.run(hang(), timeout=0.2)
    assert cancelled.wait(5)


def test_a_result_comes_back(bridge: EventLoopThread) -> None:
    async def answer() -> int:
        await anyio.sleep(0)
        return 42

    assert bridge.run(answer(), timeout=5) == 42
