"""The round-trip paths: one echo tool call, through each stack and each floor.

* ``smcp_sync``: Agent (this process) → SMCPServer (process) → Computer (process) →
  stdio MCP echo server → back;
* ``official`` (a2c-smcp 0.1.6) and ``official_042`` (0.4.2): the official SDK's sync
  Agent, Server and Computer, one process each (that version's venv), calling the same
  echo server;
* floors: ``mcp_direct``, the echo tool called with the mcp SDK's `ClientSession` (stdio,
  asyncio tasks for concurrency); ``raw_socketio``, a bare python-socketio ``call`` to a
  Server on the same werkzeug transport; ``local_computer``, our `Computer.call_tool` in
  this process (MCP through the Computer's bridge, no Socket.IO).

Each path is a context manager that sets its stack up once and yields a function
``measure(plan) -> outcome`` (`loadgen.measure`'s dict plus ``cpu_s``, the CPU seconds all
of the path's processes spent in the loop, see `cpu`). Every call checks its answer (the
echoed text), so failures are counted, never timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import loadgen
from .cpu import CpuWindow
from .echo import EchoServer
from .processes import READY_TIMEOUT, Peers

TEXT = "ping"
#: Seconds one call may take before it counts as an error.
CALL_TIMEOUT = 10.0
#: Seconds the official driver may take beyond its loop budgets to answer.
DRIVER_GRACE = 60.0

Outcome = dict[str, Any]
Measure = Callable[[loadgen.LoadPlan], Outcome]


def measuring(call: Callable[[], Any]) -> Measure:
    def measure(plan: loadgen.LoadPlan) -> Outcome:
        with CpuWindow() as cpu:
            outcome = loadgen.measure(call, plan)
        return {**outcome, "cpu_s": cpu.seconds}

    return measure


def expect_text(result: Any) -> None:
    if result.is_error or result.text != TEXT:
        raise RuntimeError(f"unexpected result: is_error={result.is_error} text={result.text!r}")


def _office() -> str:
    return f"bench-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def smcp_sync(echo: EchoServer, observability: str | None = None) -> Iterator[Measure]:
    """`observability`: the Server's metrics and audit trail "off" or "on" (`peers`), or
    None for its default."""
    from smcp_sync.connection.session import ReconnectPolicy

    from smcp_sync.agent import Agent

    office = _office()
    with Peers() as peers:
        url = peers.start("smcp-server", *(("--observability", observability) if observability else ()))["url"]
        peers.computer(url, office, "bench-c", echo.config())
        with Agent("bench-a", reconnect=ReconnectPolicy(enabled=False)) as agent:
            agent.connect(url, timeout=10)
            agent.join_office(office, timeout=10)
            yield measuring(lambda: expect_text(agent.call_tool("bench-c", "echo", {"text": TEXT}, CALL_TIMEOUT)))


@contextlib.contextmanager
def local_computer(echo: EchoServer) -> Iterator[Measure]:
    from smcp_sync.computer import Computer

    with Computer("bench-local", servers=[echo.config()]) as computer:
        yield measuring(lambda: expect_text(computer.call_tool("echo", {"text": TEXT}, CALL_TIMEOUT)))


@contextlib.contextmanager
def raw_socketio() -> Iterator[Measure]:
    import socketio

    from .peers import RAW_NAMESPACE

    client = socketio.Client(handle_sigint=False, reconnection=False)

    def echo() -> None:
        answer = client.call("echo", {"text": TEXT}, namespace=RAW_NAMESPACE, timeout=CALL_TIMEOUT)
        if answer != {"text": TEXT}:
            raise RuntimeError(f"unexpected answer {answer!r}")

    with Peers() as peers:
        url = peers.start("raw-server")["url"]
        client.connect(url, namespaces=[RAW_NAMESPACE], transports=["websocket"], wait_timeout=10)
        try:
            yield measuring(echo)
        finally:
            client.disconnect()


@contextlib.contextmanager
def mcp_direct(echo: EchoServer) -> Iterator[Measure]:
    """A fresh session per measure (asyncio.run): the SDK's context managers must be
    entered and left by one task, and a loop kept in a thread would add the very thread
    hop this floor is free of. The server's start-up stays outside the CPU window."""
    yield lambda plan: asyncio.run(_mcp_direct(echo, plan))


async def _mcp_direct(echo: EchoServer, plan: loadgen.LoadPlan) -> Outcome:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=echo.command[0], args=list(echo.command[1:]))
    with open(os.devnull, "w") as errlog:  # stdio_client needs a real file (docs/ARCHITECTURE.md, Library facts)
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 30)

            async def call() -> None:
                result = await asyncio.wait_for(session.call_tool("echo", {"text": TEXT}), CALL_TIMEOUT)
                text = result.content[0].text if result.content else None
                if result.is_error or text != TEXT:
                    raise RuntimeError(f"unexpected result: is_error={result.is_error} text={text!r}")

            with CpuWindow() as cpu:
                outcome = await loadgen.measure_async(call, plan)
            return {**outcome, "cpu_s": cpu.seconds}


@contextlib.contextmanager
def official(echo: EchoServer, official_python: Callable[[], Path], version: str) -> Iterator[Measure]:
    """The driver (`official_driver.py`) stays up and runs one plan per request. Its clients
    present the key as that version's own Server reads it, and call the echo tool by the
    name that version's Computer gives it (0.4+: with its BundleID)."""
    from tests.interop.harness import OfficialPeer

    peer = OfficialPeer(version, official_python())
    office = _office()
    with Peers() as peers:
        url = peers.official_server(peer.python)
        computer = peers.official_computer(peer, url, office, "bench-c", echo.config())
        driver = peers.official_driver(peer, url, office, "bench-a", "bench-c", TEXT, int(CALL_TIMEOUT))
        for child in (computer, driver):  # both start at once; neither needs the other to get ready
            child.wait_for("ready", READY_TIMEOUT)

        def measure(plan: loadgen.LoadPlan) -> Outcome:
            budget = plan.sequential_budget * 2 + plan.concurrent_budget * len(plan.levels) + DRIVER_GRACE
            after = driver.mark()
            with CpuWindow() as cpu:  # the driver, Server, Computer and echo server are children
                driver.send({"plan": plan.to_dict()})
                outcome = driver.wait_for("result", budget, after=after)["outcome"]
            return {**outcome, "cpu_s": cpu.seconds}

        yield measure
