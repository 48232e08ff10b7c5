"""Finder change detection end to end: a file added, edited or removed in the documents
server's folder, and the test resource server's list changes and update bursts, each
reaching the Agent as `notify:update_finder` (coalesced) and showing in the next
`get_finder`; tool calls reordering the servers. Each test has an office of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smcp_sync.protocol import events

from .helpers import (
    DESIGN,
    MTIMES,
    NOTES_HOST,
    SALES,
    Notifications,
    copy_samples,
    doc_ref,
    doc_uri,
    documents_config,
    note,
    office,
    replace_file,
    resource_config,
)

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

UPDATE = events.UPDATE_FINDER_NOTIFICATION
NOTES = [note("weekly", "Weekly notes", "md", "2026-05-01T08:00:00Z"), note("retro", "Retrospective", "md")]
WEEKLY = f"dpe://{NOTES_HOST}/weekly"


def test_adding_editing_and_removing_files_each_notify_once_and_show(tmp_path: Path) -> None:
    folder = copy_samples(tmp_path / "documents")
    with office([documents_config(folder)], prefetch_finder=True) as (_, agent):
        notes = Notifications(agent, UPDATE)
        assert agent.finder_cache.wait_for("c1", timeout=10).total_count == 5
        notes.settle(UPDATE)
        notes.forget()

        # a new file: one announcement, and the catalogue (and the cache) has it
        (folder / "notes").mkdir()
        replace_file(folder / "notes" / "idea.md", "# 新想法\n\n用 Finder 管理周报。\n", "2026-06-01T00:00:00Z")
        assert notes.settle(UPDATE) == 1
        added = f"dpe://com.example.docs/{doc_ref('notes/idea.md', 'notes-idea')}"
        finder = agent.get_finder("c1", timeout=10)
        assert finder.total_count == 6 and finder.documents[0].uri == added and finder.documents[0].title == "新想法"
        assert notes.cached("finder", lambda cached: cached.documents[0].uri == added).total_count == 6

        # an edited file: announced, and its summary and last_modified are read again
        text = (folder / DESIGN).read_text(encoding="utf-8")
        edited = text.replace("without deadlocks.", "without deadlocks, revised.", 1)
        replace_file(folder / DESIGN, edited, "2026-07-01T00:00:00Z")
        assert notes.settle(UPDATE) == 2
        first = agent.get_finder("c1", timeout=10).documents[0]
        assert (first.uri, first.last_modified) == (doc_uri(DESIGN), "2026-07-01T00:00:00Z")
        assert first.summary.endswith("without deadlocks, revised.")

        # a removed file: announced, and gone
        (folder / SALES).unlink()
        assert notes.settle(UPDATE) == 3
        remaining = [d.uri for d in agent.get_finder("c1", timeout=10).documents]
        assert doc_uri(SALES) not in remaining and len(remaining) == 5
        assert agent.finder_cache.get("c1").total_count == 5


def test_only_a_changed_uri_set_is_announced_and_tool_calls_reorder_the_servers(tmp_path: Path) -> None:
    folder = copy_samples(tmp_path / "documents")
    servers = [documents_config(folder), resource_config("notes", tmp_path / "notes.json", NOTES)]
    with office(servers) as (computer, agent):
        notes = Notifications(agent, UPDATE)
        assert [d.server for d in agent.get_finder("c1", timeout=10).documents] == ["docs"] * 5 + ["notes"] * 2
        notes.settle(UPDATE)
        notes.forget()

        # resources/list_changed with the same URI set: no notification
        unchanged = agent.call_tool("c1", "set_resources", {"resources": NOTES}, timeout=10)
        assert not unchanged.is_error and "list_changed sent to 1" in unchanged.text
        assert notes.settle(UPDATE) == 0

        # the tool call put "notes" first: servers by tool-call history, then by name
        order = agent.get_finder("c1", timeout=10).documents
        assert [d.server for d in order] == ["notes"] * 2 + ["docs"] * 5
        assert [d.uri for d in order[:2]] == [WEEKLY, f"dpe://{NOTES_HOST}/retro"]  # the undated one last
        assert [d.uri for d in order[2:]] == [doc_uri(name) for name in MTIMES]

        # a different set: exactly one notification, and the new document is there
        more = [*NOTES, note("plan", "Plan", "md", "2026-06-01T00:00:00Z")]
        agent.call_tool("c1", "set_resources", {"resources": more}, timeout=10)
        assert notes.settle(UPDATE) == 1
        finder = agent.get_finder("c1", keywords=["plan"], timeout=10)
        assert [d.uri for d in finder.documents] == [f"dpe://{NOTES_HOST}/plan"] and finder.total_count == 1

        # a server removed from the Computer takes its documents along
        computer.servers.remove("notes")
        assert notes.settle(UPDATE) == 2
        assert [d.uri for d in agent.get_finder("c1", timeout=10).documents] == [doc_uri(name) for name in MTIMES]


def test_a_burst_of_500_updates_is_a_handful_of_notifications_and_ends_current(tmp_path: Path) -> None:
    with office([resource_config("notes", tmp_path / "notes.json", NOTES)], prefetch_finder=True) as (_, agent):
        notes = Notifications(agent, UPDATE)
        assert agent.finder_cache.wait_for("c1", timeout=10).documents[0].title == "Weekly notes"
        notes.settle(UPDATE)
        notes.forget()

        renamed = json.loads(NOTES[0]["text"]) | {"title": "Weekly notes, final"}
        agent.call_tool("c1", "touch", {"uri": WEEKLY, "text": json.dumps(renamed)}, timeout=10)
        burst = agent.call_tool("c1", "burst", {"n": 500, "uri": WEEKLY}, timeout=30)
        assert burst.text == "500 updated notification(s) sent"

        announced = notes.settle(UPDATE)
        assert 1 <= announced <= 5, f"{announced} notifications for 501 updates"
        assert agent.get_finder("c1", timeout=10).documents[0].title == "Weekly notes, final"
        assert agent.finder_cache.get("c1").documents[0].title == "Weekly notes, final"
