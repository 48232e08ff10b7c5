"""Parts of the context end-to-end tests: the MCP server configs (the bundled example
servers and the test resource server, as child processes of the Computer), the sample
folder with known modification times, and a recorder of the notifications an Agent gets.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import quote

from mcp_servers import RESOURCE_SERVER, write_state
from office_parts import connected_computer, joined_agent, serving
from smcp_sync.connection.session import ReconnectPolicy

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer
from smcp_sync.demo import SAMPLE_DOCUMENTS

OFFICE = "office-context"
DOCS_HOST = "com.example.docs"
NOTES_HOST = "com.example.notes"
#: Upper bound for a notification to arrive (they normally take a debounce, ~0.2 s).
WAIT = 15.0
#: How long "no (further) notification" is waited for: longer than the Computer's
#: longest debounce delay (1 s), so a coalesced announcement would have been sent.
QUIET = 1.5

REPORT, DESIGN, MEETING, SALES, RELEASE = (
    "2026-Q1-经营报告.md",
    "design-note-sync-bridge.md",
    "meeting-notes-2026-03-12.md",
    "sales-2026-q1.csv",
    "release-notes.txt",
)
MTIMES = {  # newest first: the order of the catalogue within the documents server
    SALES: "2026-04-01T09:00:00Z",
    REPORT: "2026-03-31T10:00:00Z",
    DESIGN: "2026-03-20T16:45:00Z",
    MEETING: "2026-03-12T15:30:00Z",
    RELEASE: "2026-02-01T08:00:00Z",
}
SLUGS = {
    REPORT: "2026-q1-经营报告",  # letters of any script are kept (percent-encoded in URIs)
    DESIGN: "design-note-sync-bridge",
    MEETING: "meeting-notes-2026-03-12",
    SALES: "sales-2026-q1",
    RELEASE: "release-notes",
}


NO_RECONNECT = ReconnectPolicy(enabled=False)


@contextlib.contextmanager
def office(
    servers: list[dict[str, Any]], computer_options: dict[str, Any] | None = None, **agent_options: Any
) -> Iterator[tuple[Computer, Agent]]:
    """A real Server (in-thread), a Computer "c1" hosting `servers` (with
    `computer_options`) and an Agent "a1" (with `agent_options`) in one office;
    everything stopped on exit."""
    with (
        serving() as smcp,
        connected_computer(
            "c1", servers, smcp.url, OFFICE, timeout=30, reconnect=NO_RECONNECT, **(computer_options or {})
        ) as computer,
        joined_agent("a1", smcp.url, OFFICE, timeout=10, reconnect=NO_RECONNECT, **agent_options) as agent,
    ):
        yield computer, agent


def doc_ref(relative_path: str, slug: str) -> str:
    """The documents server's doc_ref rule: a slug + 6 hex digits of the path's SHA-1."""
    return f"{slug}-{hashlib.sha1(relative_path.encode('utf-8')).hexdigest()[:6]}"


def doc_uri(name: str, sub: str = "") -> str:
    return f"dpe://{DOCS_HOST}/{quote(doc_ref(name, SLUGS[name]), safe='')}{sub}"


def documents_config(root: Path, name: str = "docs") -> dict[str, Any]:
    """The example documents server on `root`, polling the folder fast."""
    args = ["-m", "smcp_sync.demo.servers.documents_server", "--root", str(root), "--poll-interval", "0.1"]
    return {"name": name, "type": "stdio", "server_parameters": {"command": sys.executable, "args": args}}


def windows_config(name: str, *args: str) -> dict[str, Any]:
    """The example window server (four windows, one live), with its command-line `args`."""
    argv = ["-m", "smcp_sync.demo.servers.window_server", *args]
    return {"name": name, "type": "stdio", "server_parameters": {"command": sys.executable, "args": argv}}


def resource_config(name: str, state: Path, resources: list[dict[str, Any]]) -> dict[str, Any]:
    """The test resource server serving `resources` (written to `state`); its tools
    `set_resources`, `touch` and `burst` change them and notify."""
    write_state(state, resources)
    args = [RESOURCE_SERVER, "--state", str(state), "--name", name]
    return {"name": name, "type": "stdio", "server_parameters": {"command": sys.executable, "args": args}}


def copy_samples(folder: Path) -> Path:
    """The sample documents in `folder`, with the known modification times of `MTIMES`."""
    shutil.copytree(SAMPLE_DOCUMENTS, folder)
    for name, iso in MTIMES.items():
        set_mtime(folder / name, iso)
    return folder


def set_mtime(path: Path, iso: str) -> None:
    seconds = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    os.utime(path, ns=(int(seconds) * 10**9,) * 2)


def replace_file(path: Path, text: str, mtime: str) -> None:
    """Write `path` atomically: the documents server polls and must never see half a file."""
    temporary = path.with_name(f".{path.name}.tmp")  # hidden names are never served
    temporary.write_text(text, encoding="utf-8")
    set_mtime(temporary, mtime)
    os.replace(temporary, path)


def note(doc: str, title: str, file_type: str = "md", last_modified: str | None = None, **extra: Any) -> dict[str, Any]:
    """A resource-server entry that is a Finder document of the notes server."""
    uri = f"dpe://{NOTES_HOST}/{doc}"
    metadata = {"doc_ref": doc, "uri": uri, "file_uri": f"file:///notes/{doc}.{file_type}", "file_type": file_type}
    metadata.update(title=title, page_count=1, **extra)
    if last_modified is not None:
        metadata["last_modified"] = last_modified
    return {"uri": uri, "name": doc, "mimeType": "application/json", "text": json.dumps(metadata, ensure_ascii=False)}


class Notifications:
    """Records the notifications `events` an Agent receives (on its dispatcher thread),
    and the values its caches keep (`cached`)."""

    def __init__(self, agent: Agent, *names: str):
        self.seen: list[tuple[str, Any]] = []
        self._changed = threading.Condition()
        for name in names:
            agent.on(name, self._recorder(name))
        agent.on_cache_update(lambda kind, computer, value: self._recorder(f"cached {kind}")(value))

    def _recorder(self, name: str):
        def record(notification: Any) -> None:
            with self._changed:
                self.seen.append((name, notification))
                self._changed.notify_all()

        return record

    def count(self, name: str) -> int:
        with self._changed:
            return sum(1 for seen, _ in self.seen if seen == name)

    def wait_for(self, name: str, count: int = 1, timeout: float = WAIT) -> int:
        """Wait until `count` `name` notifications have arrived; returns how many did."""
        with self._changed:
            self._changed.wait_for(lambda: self.count(name) >= count, timeout)
            arrived = self.count(name)
        assert arrived >= count, f"{arrived} {name} within {timeout}s, expected {count}; seen {self.seen}"
        return arrived

    def cached(self, kind: str, wanted: Callable[[Any], bool], timeout: float = WAIT) -> Any:
        """The first value the Agent's `kind` cache ("desktop", "finder", ...) kept (since
        `forget`) for which `wanted(value)` holds, waiting for it: a refresh runs after the
        callbacks of the notification that caused it, so a test waits for its value so."""

        def found() -> list[Any]:
            return [value for seen, value in self.seen if seen == f"cached {kind}" and wanted(value)]

        with self._changed:
            self._changed.wait_for(found, timeout)
            values = found()
        assert values, f"no {kind} value as wanted within {timeout}s; seen {self.seen}"
        return values[0]

    def forget(self) -> None:
        """Start counting afresh. Used once the office has settled after starting: the
        Computer may announce its first listing of a channel, which an Agent that joined
        within the debounce delay receives."""
        with self._changed:
            self.seen.clear()

    def settle(self, name: str) -> int:
        """Wait until no further `name` arrives for `QUIET` seconds; returns the count."""
        while True:
            before = self.count(name)
            with self._changed:
                self._changed.wait_for(lambda: self.count(name) > before, QUIET)
            if self.count(name) == before:
                return before
