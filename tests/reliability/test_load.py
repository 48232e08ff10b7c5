"""Load: 10,000 tool calls from 16 threads of one Agent, spread over three Computers
that each host a stdio MCP server, through one in-process Server (1,000 in every tox
environment, the full 10,000 once per run: the count adds time, not code paths).

Every Computer's tools carry its own prefix (``c1_echo``...), so a call routed to the
wrong Computer would come back as "unknown tool" instead of an echo; each call echoes a
text of its own, so a crossed answer would not match its request.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from smcp_sync import Computer
from smcp_sync.computer import allow_all
from smcp_sync.computer import ChannelOptions

from .parts import FAST, SETUP_TIMEOUT, join_agent, start_server, tool_server

logger = logging.getLogger(__name__)

THREADS = 16
COMPUTERS = ("c0", "c1", "c2")
OFFICE = "load"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("calls", [1_000, pytest.param(10_000, marks=pytest.mark.once)])
def test_calls_none_lost_none_misrouted_every_answer_matches(calls, stack, record_property):
    server = start_server(stack)
    computers = {}
    for name in COMPUTERS:
        computers[name] = Computer(name, [tool_server(prefix=f"{name}_")], policy=FAST, confirm=allow_all, channels=ChannelOptions(history_size=calls))
        stack.callback(computers[name].close)
    with ThreadPoolExecutor(len(computers)) as starting:  # their MCP servers start in parallel
        list(starting.map(lambda c: c.connect(server.url, OFFICE, timeout=SETUP_TIMEOUT), computers.values()))
    agent = join_agent(stack, "a1", server.url, OFFICE)

    answers: dict[int, tuple[str, str, bool, object]] = {}
    failures: list[str] = []
    lock = threading.Lock()

    def caller(first: int) -> None:
        for n in range(first, calls, THREADS):
            computer = COMPUTERS[n % len(COMPUTERS)]
            text = f"call {n} for {computer}"
            try:
                result = agent.call_tool(computer, f"{computer}_echo", {"text": text}, timeout=30)
            except Exception as exc:  # recorded, so one failure does not hide the others
                with lock:
                    failures.append(f"{text}: {exc!r}")
                continue
            with lock:
                answers[n] = (text, result.text, result.is_error, result.structured_content)

    started = time.monotonic()
    threads = [threading.Thread(target=caller, args=(t,), name=f"load-{t}") for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    elapsed = time.monotonic() - started
    record_property("load_seconds", round(elapsed, 1))
    logger.warning("%d tool calls over %d threads took %.1f s (%.0f calls/s)", calls, THREADS, elapsed, calls / elapsed)

    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert len(answers) == calls  # none lost
    wrong = {n: a for n, a in answers.items() if a != (a[0], a[0], False, {"result": a[0]})}
    assert wrong == {}  # every answer is the echo of its own request

    # Each Computer ran exactly the calls addressed to it, each once.
    expected = collections.Counter(COMPUTERS[n % len(COMPUTERS)] for n in range(calls))
    ran = {name: computer.tool_call_history() for name, computer in computers.items()}
    assert {name: len(records) for name, records in ran.items()} == dict(expected)
    assert all(record.tool == f"tools__{name}_echo" and record.ok for name, records in ran.items() for record in records)
    assert len({record.req_id for records in ran.values() for record in records}) == calls
