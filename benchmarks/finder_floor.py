"""The floor of a cold Finder catalogue: the Level 1 reads the Computer's warm-up makes,
made directly with the mcp SDK's `ClientSession`, from one process, at the Computer's
concurrency.

Why: "catalogue complete after N s" means little alone; next to the time the same reads
take without the Computer (no bridge, no cache, no Socket.IO) it says what the Computer
adds. The MCP servers are the same `doc_server.py` processes (started afresh here, one
session each); every server is listed, then every document read, `BATCH_CONCURRENCY`
requests in flight in all (the warm-up works one batch of one server at a time, each batch
`BATCH_CONCURRENCY` wide: the same number in flight). The Computer also subscribes to each
document before reading it; the floor does not (the reads are what the issue compares),
and a second pass over the same sessions does (`subscribed_*`: subscribe, then read, per
document), to tell what the subscriptions cost from what the Computer adds.

Timed from the first listing to the last read; each read is checked (its JSON names the
document). CPU seconds are kept apart: the MCP servers' (psutil, the `doc_server.py`
children of this process) and this process's (the client side), so a slow floor can be
explained by the servers' own CPU on a small machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import psutil

#: Seconds one MCP request of the floor may take.
REQUEST_TIMEOUT = 60.0
#: Seconds an MCP server may take to start and initialise.
START_TIMEOUT = 60.0


def run(server_args: list[list[str]], python: str) -> dict[str, Any]:
    """`server_args`: the `doc_server.py` argv (after the interpreter) of each server."""
    return asyncio.run(_floor(server_args, python))


def _server_cpu(marker: str) -> dict[int, float]:
    seconds = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if marker in " ".join(proc.cmdline()):
                times = proc.cpu_times()
                seconds[proc.pid] = times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return seconds


async def _floor(server_args: list[list[str]], python: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from smcp_sync.computer.mcp.manager import BATCH_CONCURRENCY

    async with contextlib.AsyncExitStack() as stack:
        errlog = stack.enter_context(open(os.devnull, "w"))  # stdio_client needs a real file (docs/ARCHITECTURE.md, Library facts)
        sessions = []
        for args in server_args:
            params = StdioServerParameters(command=python, args=args)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            session = await stack.enter_async_context(ClientSession(read, write))
            await asyncio.wait_for(session.initialize(), START_TIMEOUT)
            sessions.append(session)
        marker = server_args[0][0]  # the doc_server.py path

        async def reader(todo: Iterator[tuple[Any, str]], subscribe: bool) -> None:
            for session, uri in todo:  # the readers share one iterator: each URI is read once
                if subscribe:
                    await asyncio.wait_for(session.subscribe_resource(uri), REQUEST_TIMEOUT)
                result = await asyncio.wait_for(session.read_resource(uri), REQUEST_TIMEOUT)
                if json.loads(result.contents[0].text)["uri"] != uri:
                    raise RuntimeError(f"read {uri} answered another document")

        async def one_pass(subscribe: bool) -> dict[str, Any]:
            servers_before, own_before = _server_cpu(marker), time.process_time()
            started = time.perf_counter()
            listings = [await asyncio.wait_for(session.list_resources(), REQUEST_TIMEOUT) for session in sessions]
            listed_s = time.perf_counter() - started
            uris = [(s, str(resource.uri)) for s, listing in zip(sessions, listings) for resource in listing.resources]
            todo = iter(uris)
            await asyncio.gather(*(reader(todo, subscribe) for _ in range(BATCH_CONCURRENCY)))
            floor_s = time.perf_counter() - started
            own_cpu = time.process_time() - own_before
            servers_after = _server_cpu(marker)
            return {
                "reads": len(uris),
                "list_s": listed_s,
                "floor_s": floor_s,
                "servers_cpu_s": sum(spent - servers_before.get(pid, 0.0) for pid, spent in servers_after.items()),
                "client_cpu_s": own_cpu,
            }

        reads = await one_pass(subscribe=False)
        subscribed = await one_pass(subscribe=True)
    return {
        **reads,
        "concurrency": BATCH_CONCURRENCY,
        **{f"subscribed_{key}": value for key, value in subscribed.items() if key != "reads"},
    }
