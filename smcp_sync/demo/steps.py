"""The walkthrough: what the demo's Agent does in the office, one `Step` at a time.

Each step makes real protocol requests and returns both a short human-readable body and
its data (the wire form, for ``--json``). A step the Computer cannot answer reports its
error and the walkthrough goes on: the other steps still show what works.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import attrs

from ..agent import Agent
from ..context.dpe_render import render_markdown
from ..protocol import events
from ..protocol.codec import to_wire
from ..protocol.errors import SMCPError, SMCPTimeoutError
from ..protocol.models import CallToolResult, DPEDocumentSummary, DPEPage, GetFinderRet
from .stage import DemoStage
from .text import excerpt, first_line, shorten

#: Tool calls of the tour: one that answers, one the tool refuses (an `isError` result).
TOOL_CALLS = (
    ("calculate", {"expression": "(1260 + 1305 + 1615) / 3"}),
    ("calculate", {"expression": "1 / 0"}),
)
#: The file the update step writes into the (temporary) documents folder.
NOTE_NAME = "demo-note.md"
NOTE_TEXT = "# A note from the demo\n\nWritten by `smcp-sync demo` to show `notify:update_finder`.\n"
#: Element categories worth showing in full at Level 3, best first.
SHOWCASE_CATEGORIES = ("table", "code", "list", "text")
MAX_WINDOW_LINES = 8
MAX_PAGE_LINES = 16
MAX_ELEMENT_LINES = 10
MAX_SKILL_LINES = 8


@attrs.frozen
class Step:
    """One section of the output. `lines`: for people; `data`: for ``--json``; `error`:
    set when the step failed (the lines then say why)."""

    key: str
    title: str
    lines: tuple[str, ...] = ()
    data: dict[str, Any] = attrs.Factory(dict)
    error: SMCPError | None = None


class Walkthrough:
    """The tour of an open `DemoStage`; `timeout`: seconds for each request."""

    def __init__(self, stage: DemoStage, timeout: float) -> None:
        if stage.agent is None:
            raise RuntimeError("the demo stage is not open")
        self.stage = stage
        self.agent: Agent = stage.agent
        self.computer = stage.computer_name
        self.timeout = timeout
        self._catalogue: GetFinderRet | None = None
        self._plan: list[tuple[str, str, Callable[[], tuple[list[str], dict[str, Any]]]]] = [
            ("office", "The office", self.office),
            ("tools", "The Computer's tools", self.tools),
            ("tool_call", "Tool calls", self.tool_calls),
            ("desktop", "The desktop", self.desktop),
            ("finder", "The Finder catalogue", self.finder),
            ("document", "A document, Level 1 → 3", self.document),
            ("skills", "Skills", self.skills),
            ("update", "An update notification", self.update),
        ]

    def __len__(self) -> int:
        return len(self._plan)

    def steps(self) -> Iterator[Step]:
        """Run the steps in order, yielding each as soon as it is done."""
        for key, title, show in self._plan:
            try:
                lines, data = show()
            except SMCPError as exc:
                yield Step(key, title, (f"failed: {exc}",), {"error": exc.to_wire()}, exc)
            else:
                yield Step(key, title, tuple(lines), data)

    # -- the steps -----------------------------------------------------------------------

    def office(self) -> tuple[list[str], dict[str, Any]]:
        sessions = self.agent.list_room(timeout=self.timeout)
        lines = [
            f"Server    {self.stage.url}  (Socket.IO, namespace {events.NAMESPACE})",
            f"Office    {self.stage.office}",
            *(f"  {session.role:<9} {session.name}" for session in sessions),
        ]
        data = {"url": self.stage.url, "office_id": self.stage.office, "sessions": to_wire(sessions)}
        return lines, data

    def tools(self) -> tuple[list[str], dict[str, Any]]:
        tools = self.agent.get_tools(self.computer, timeout=self.timeout)
        width = max((len(tool.name) for tool in tools), default=0)
        lines = [f"{self.computer} offers {len(tools)} tools:"]
        lines += [f"  {tool.name:<{width}}  {shorten(first_line(tool.description), 80)}" for tool in tools]
        return lines, {"computer": self.computer, "tools": to_wire(tools)}

    def tool_calls(self) -> tuple[list[str], dict[str, Any]]:
        lines, calls = [], []
        for name, params in TOOL_CALLS:
            result = self.agent.call_tool(self.computer, name, params, timeout=self.timeout)
            lines += [f"{name} {json.dumps(params)}", f"  → {_outcome(result)}"]
            calls.append({"tool": name, "params": params, "result": to_wire(result)})
        return lines, {"calls": calls}

    def desktop(self) -> tuple[list[str], dict[str, Any]]:
        windows = self.agent.get_desktop(self.computer, timeout=self.timeout)
        lines = [f"{_count(len(windows), 'window')}, most relevant first:"]
        for window in windows:
            lines += ["", *_indented(excerpt(window, MAX_WINDOW_LINES))]
        return lines, {"desktops": windows}

    def finder(self) -> tuple[list[str], dict[str, Any]]:
        self._catalogue = catalogue = self.agent.get_finder(self.computer, timeout=self.timeout)
        shown = f" (the first {len(catalogue.documents)})" if len(catalogue.documents) < catalogue.total_count else ""
        lines = [f"{catalogue.total_count} documents{shown}, most recently modified first:"]
        for doc in catalogue.documents:
            pages = _count(doc.page_count, "page")
            lines += [f"  {shorten(doc.title, 70)}  ({doc.file_type}, {pages})", f"    {doc.uri}"]
        return lines, to_wire(catalogue)

    def document(self) -> tuple[list[str], dict[str, Any]]:
        catalogue = self._catalogue or self.agent.get_finder(self.computer, timeout=self.timeout)
        if not catalogue.documents:
            return ["the Finder lists no documents"], {}
        doc = self.agent.read_document_pages(self.computer, _richest(catalogue.documents), timeout=self.timeout)
        lines = [f"Level 1  {doc.uri}", f"  {doc.title}"]
        if doc.summary:
            lines.append(f"  {shorten(doc.summary, 90)}")
        if doc.keywords:
            lines.append(f"  keywords: {', '.join(doc.keywords)}")
        pages = doc.pages or []
        lines += [f"  page {p.page_index}: {shorten(p.title, 60)} ({p.element_count} elements)" for p in pages]

        page_index = max(pages, key=lambda p: p.element_count).page_index if pages else 0
        page = self.agent.read_page(self.computer, doc, page_index, timeout=self.timeout)
        markdown = self.agent.read_page(self.computer, doc, page_index, format="markdown", timeout=self.timeout)
        lines += ["", f"Level 2  {page.uri}  as Markdown", *_indented(excerpt(markdown, MAX_PAGE_LINES))]

        data = {"level1": to_wire(doc), "level2": {"page": to_wire(page), "markdown": markdown}}
        element = _showcase(page)
        if element is not None:
            detail = self.agent.read_element(self.computer, doc, element.element_id, timeout=self.timeout)
            lines += ["", f"Level 3  {detail.uri or element.element_id}  ({detail.category})"]
            lines += _indented(excerpt(render_markdown(detail), MAX_ELEMENT_LINES))
            data["level3"] = to_wire(detail)
        return lines, data

    def skills(self) -> tuple[list[str], dict[str, Any]]:
        skills = self.agent.get_skills(self.computer, timeout=self.timeout)
        width = max((len(skill.name) for skill in skills), default=0)
        lines = [f"{_count(len(skills), 'skill')} (SKILL.md packages the MCP servers serve):"]
        lines += [f"  {skill.name:<{width}}  {shorten(first_line(skill.description), 70)}" for skill in skills]
        data: dict[str, Any] = {"skills": to_wire(skills)}
        if skills:
            entry = self.agent.get_skill(self.computer, skills[0].name, timeout=self.timeout)
            lines += ["", f"{entry.rel_path} of {entry.name}  ({entry.total_size} bytes, {entry.mime_type})"]
            lines += _indented(excerpt(entry.body or "", MAX_SKILL_LINES))
            data["skill"] = to_wire(entry)
        return lines, data

    def update(self) -> tuple[list[str], dict[str, Any]]:
        if not self.stage.writable:
            return [
                f"skipped: the demo does not write into {self.stage.documents};",
                "change a file there while `smcp-sync demo --serve` runs to see notify:update_finder",
            ], {"skipped": True}
        heard = _Waiter()
        self.agent.on(events.UPDATE_FINDER_NOTIFICATION, heard)
        note = Path(self.stage.documents) / NOTE_NAME
        started = time.monotonic()
        note.write_text(NOTE_TEXT, encoding="utf-8")
        lines = [f"wrote {NOTE_NAME} into the documents folder"]
        notification = heard.wait(self.timeout)
        if notification is None:
            raise SMCPTimeoutError(f"no {events.UPDATE_FINDER_NOTIFICATION} within {self.timeout:g}s")
        elapsed = time.monotonic() - started
        lines.append(f"{events.UPDATE_FINDER_NOTIFICATION} from {notification.computer} after {elapsed:.1f}s")
        catalogue = self.agent.get_finder(self.computer, timeout=self.timeout)
        added = [doc for doc in catalogue.documents if doc.file_uri.endswith(NOTE_NAME)]
        including = f", including {added[0].uri}" if added else ""
        lines.append(f"the Finder now lists {catalogue.total_count} documents{including}")
        data = {"file": NOTE_NAME, "notification": to_wire(notification), "total_count": catalogue.total_count}
        return lines, data


class _Waiter:
    """A notification callback that remembers the first notification and wakes a waiter."""

    def __init__(self) -> None:
        self._heard = threading.Event()
        self._first: Any = None

    def __call__(self, notification: Any) -> None:
        if not self._heard.is_set():
            self._first = notification
            self._heard.set()

    def wait(self, timeout: float) -> Any:
        return self._first if self._heard.wait(timeout) else None


def _outcome(result: CallToolResult) -> str:
    if result.is_error:  # the Computer's failures carry an error code, the tool's own do not
        code = f" [{result.error_code}]" if result.error_code is not None else ""
        return f"tool error{code}: {shorten(result.text, 80)}"
    return shorten(result.text or json.dumps(result.structured_content, ensure_ascii=False), 90)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _indented(lines: list[str]) -> list[str]:
    return [f"  {line}" if line else "" for line in lines]


def _richest(documents: list[DPEDocumentSummary]) -> DPEDocumentSummary:
    """The document with the most pages (the first of those): the most to navigate."""
    return max(documents, key=lambda doc: doc.page_count)


def _showcase(page: DPEPage) -> Any:
    """The page's element most worth reading in full (Level 3)."""
    for category in SHOWCASE_CATEGORIES:
        for element in page.elements:
            if element.category == category:
                return element
    return page.elements[0] if page.elements else None
