"""Change notices of MCP servers, end to end: none is lost (a relisting that fails is
retried), one server's slow relisting never holds up another's notices, and what a
server announced before answering a tool call is in force when the Agent gets the answer.
Each test has an office of its own."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from mcp_servers import TOOL_SERVER, listings, write_state

from .helpers import NOTES_HOST, note, office, resource_config

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

NOTES = [note("weekly", "Weekly notes", "md", "2026-05-01T08:00:00Z"), note("retro", "Retrospective", "md")]
WEEKLY = f"dpe://{NOTES_HOST}/weekly"


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.05)


def test_a_relisting_that_fails_is_retried_and_the_new_document_shows(tmp_path: Path) -> None:
    state = tmp_path / "notes.json"
    with office([resource_config("notes", state, NOTES)]) as (_, agent):
        assert agent.get_finder("c1", timeout=10).total_count == 2
        write_state(state, NOTES, list_failures=1)  # the relisting after the next notice fails once
        added = note("plan", "Plan", "md", "2026-06-01T00:00:00Z")
        before = listings(state)
        agent.call_tool("c1", "set_resources", {"resources": [*NOTES, added]}, timeout=20)
        assert listings(state) >= before + 2  # the failed listing, and the retry that read it
        titles = [d.title for d in agent.get_finder("c1", timeout=10).documents]
        assert "Plan" in titles, titles


def test_a_slow_relisting_of_one_server_does_not_hold_up_another(tmp_path: Path) -> None:
    """The read-your-writes of the Finder (docs/computer/index.md) while another server is being listed
    again for longer than a tool's answer ever waits (`SETTLE_WAIT`, 5 s)."""
    slow, notes = tmp_path / "slow.json", tmp_path / "notes.json"
    servers = [resource_config("slow", slow, []), resource_config("notes", notes, NOTES)]
    with office(servers) as (_, agent):
        assert agent.get_finder("c1", timeout=10).total_count == 2
        write_state(slow, [], list_delay=8.0)
        before = listings(slow)
        relisting = agent.submit_tool_call("c1", "slow__set_resources", {"resources": []}, timeout=30)
        wait_until(lambda: listings(slow) > before, 10, "the slow server is being listed again")
        renamed = json.dumps({**json.loads(NOTES[0]["text"]), "title": "Weekly notes, renamed"})
        agent.call_tool("c1", "notes__touch", {"uri": WEEKLY, "text": renamed}, timeout=10)
        titles = [d.title for d in agent.get_finder("c1", timeout=10).documents]
        assert "Weekly notes, renamed" in titles and "Weekly notes" not in titles, titles
        assert not relisting.done()  # it was still being listed all along
        relisting.result(timeout=30)


def test_a_tool_announced_before_the_answer_is_callable_right_after_it() -> None:
    """A tool that adds a tool says so (tools/list_changed) before its result: the new
    tool answers right after, every time."""
    tools = {"name": "tools", "type": "stdio", "server_parameters": {"command": sys.executable, "args": [TOOL_SERVER]}}
    with office([tools]) as (computer, agent):
        for i in range(20):  # through the office, and on the Computer (where the race is tightest)
            call = (lambda *a: agent.call_tool("c1", *a, timeout=10)) if i < 10 else (lambda *a: computer.call_tool(*a, timeout=10))
            added = call("add_tool", {"name": f"made_{i}"})
            assert not added.is_error, added.text
            made = call(f"made_{i}", {"n": i})
            assert (made.is_error, made.text) == (False, f'made_{i} called with {{"n": {i}}}'), (i, made.text)
