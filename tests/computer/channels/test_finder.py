"""The Finder on the Computer (spec/finder.md, docs/ARCHITECTURE.md, Wire decisions): the catalogue of real MCP servers'
`dpe://` documents — filters, paging, server order by tool-call history, summaries cached
until a change notice, unreadable documents left out — and the bundled documents server's
folder changes reaching the Computer as announcements."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync.computer import Computer, allow_all
from smcp_sync.demo import SAMPLE_DOCUMENTS
from smcp_sync.protocol import BadRequestError, DPEDocumentSummary, events
from smcp_sync.computer import ChannelOptions

from ..helpers import FAST, write_state
from ..resource_helpers import DOCUMENTS_SERVER, QUICK, Announcements, module_config, resource_config

pytestmark = pytest.mark.timeout(60)

FINDER = events.UPDATE_FINDER


def doc(host: str, ref: str, title: str, file_type: str = "md", **fields: Any) -> dict[str, Any]:
    uri = f"dpe://{host}/{ref}"
    metadata = {"doc_ref": ref, "uri": uri, "file_uri": f"file:///{ref}.{file_type}", "file_type": file_type,
                "title": title, "page_count": 2, **fields}  # fmt: skip
    return {"uri": uri, "name": ref, "json": metadata}


ZETA = [
    doc("docs.z", "z-old", "Zeta notes", last_modified="2026-01-01T08:00:00+08:00"),
    doc("docs.z", "z-none", "Undated", summary="mentions the BUDGET in passing"),
    doc("docs.z", "z-new", "Zeta plan", "pdf", keywords=["budget", "plan"], last_modified="2026-03-01T00:00:00Z"),
]
ALPHA = [
    doc("docs.a", "a-1", "Alpha report", "pdf", last_modified="2026-02-01T00:00:00Z"),
    {"uri": "dpe://docs.a/broken", "name": "broken", "text": "not JSON at all"},
    {"uri": "dpe://docs.a/a-1/pages/0", "name": "a page", "json": {}},  # listed, but not a document
]


def alpha_config(state: Path) -> dict[str, Any]:
    """Tools renamed so both resource servers' tools are callable (history)."""
    aliases = {tool: {"alias": f"alpha_{tool}"} for tool in ("touch", "burst", "set_resources")}
    return resource_config("alpha", state, ALPHA, tool_meta=aliases)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computer]:
    """"zeta" configured before "alpha"; tests may call tools (history) but change no document."""
    folder = tmp_path_factory.mktemp("library")
    configs = [resource_config("zeta", folder / "zeta.json", ZETA), alpha_config(folder / "alpha.json")]
    computer = Computer("library", configs, policy=FAST, confirm=allow_all)
    yield computer.start()
    computer.close()


def refs(documents: list[DPEDocumentSummary]) -> list[str]:
    return [d.doc_ref for d in documents]


def test_the_catalogue_orders_servers_by_name_then_documents_newest_first(library: Computer) -> None:
    # alpha comes first by name (no history) or because every other test calls it last
    page = library.finder()
    assert (refs(page.documents), page.total_count) == (["a-1", "z-new", "z-old", "z-none"], 4)
    assert [d.server for d in page.documents] == ["alpha", "zeta", "zeta", "zeta"]
    assert page.documents[1] == DPEDocumentSummary(
        doc_ref="z-new", uri="dpe://docs.z/z-new", file_uri="file:///z-new.pdf", file_type="pdf", title="Zeta plan",
        page_count=2, server="zeta", keywords=["budget", "plan"], last_modified="2026-03-01T00:00:00Z",
    )  # fmt: skip


def test_servers_come_in_tool_call_history_order(library: Computer) -> None:
    library.call_tool("burst", {"n": 0, "uri": "none"}, timeout=10)  # zeta's tool
    assert refs(library.finder().documents) == ["z-new", "z-old", "z-none", "a-1"]
    library.call_tool("alpha_burst", {"n": 0, "uri": "none"}, timeout=10)
    assert refs(library.finder().documents) == ["a-1", "z-new", "z-old", "z-none"]


def test_keywords_file_type_and_paging(library: Computer) -> None:
    library.call_tool("alpha_burst", {"n": 0, "uri": "none"}, timeout=10)
    budget = library.finder(keywords=["budget"])  # z-new by its keywords, z-none by its summary
    assert (refs(budget.documents), budget.total_count) == (["z-new", "z-none"], 2)
    assert refs(library.finder(keywords=["ALPHA", "notes"]).documents) == ["a-1", "z-old"]  # any keyword, any case
    pdf = library.finder(file_type="pdf")
    assert (refs(pdf.documents), pdf.total_count) == (["a-1", "z-new"], 2)
    assert library.finder(file_type="PDF").total_count == 0  # exact match
    window = library.finder(offset=1, limit=2)
    assert (refs(window.documents), window.total_count) == (["z-new", "z-old"], 4)
    assert (library.finder(offset=4).documents, library.finder(offset=4).total_count) == ([], 4)
    assert refs(library.finder(keywords=["budget"], file_type="md", limit=1).documents) == ["z-none"]
    for bad in ({"limit": 0}, {"limit": 101}, {"offset": -1}):
        with pytest.raises(BadRequestError, match=f"{next(iter(bad))} must be an integer"):
            library.finder(**bad)


def test_unreadable_documents_are_left_out_and_reported(library: Computer) -> None:
    assert library.finder().total_count == 4  # the broken one does not take the catalogue down
    diagnostics = library.diagnostics()
    assert any("dpe://docs.a/broken of MCP server 'alpha' is left out" in d and "not JSON" in d for d in diagnostics)
    assert any("dpe://docs.a/a-1/pages/0" in d and "Level 1" in d for d in diagnostics)


@pytest.fixture
def watched_library(computer_factory: Any, tmp_path: Path) -> tuple[Computer, Announcements, Path]:
    state = tmp_path / "zeta.json"
    computer = computer_factory(resource_config("zeta", state, ZETA), start=False, channels=ChannelOptions(update_debounce=QUICK))
    announced = Announcements()
    computer.add_update_listener(announced)
    computer.start()
    announced.settle()
    return computer, announced, state


def test_summaries_are_read_once_and_again_only_after_a_change_notice(watched_library: Any) -> None:
    computer, announced, state = watched_library
    assert computer.finder().documents[0].title == "Zeta plan"
    renamed = [*ZETA[:2], doc("docs.z", "z-new", "Renamed plan", "pdf", last_modified="2026-03-01T00:00:00Z")]
    write_state(state, renamed)  # no notice: a Computer reading every document per call would show it
    assert [computer.finder().documents[0].title for _ in range(3)] == ["Zeta plan"] * 3
    computer.call_tool("touch", {"uri": "dpe://docs.z/z-new"}, timeout=10)  # resources/updated
    announced.wait_for(FINDER, 2)
    assert computer.finder().documents[0].title == "Renamed plan"
    assert announced.settle() == 2


def test_a_new_document_is_announced_once_and_listed(watched_library: Any) -> None:
    computer, announced, _ = watched_library
    added = doc("docs.z", "z-added", "Added later", last_modified="2026-12-01T00:00:00Z")
    computer.call_tool("set_resources", {"resources": [*ZETA, added]}, timeout=10)
    announced.wait_for(FINDER, 2)
    assert announced.settle() == 2
    assert refs(computer.finder().documents) == ["z-added", "z-new", "z-old", "z-none"]


# -- the bundled documents server on a folder of real files -------------------------------


@pytest.fixture
def folder_finder(computer_factory: Any, tmp_path: Path) -> tuple[Computer, Announcements, Path]:
    folder = tmp_path / "documents"
    shutil.copytree(SAMPLE_DOCUMENTS, folder)
    for age, name in enumerate(sorted(os.listdir(folder))):  # known order: sorted names, newest first
        if (folder / name).is_file():
            os.utime(folder / name, (1_700_000_000 - age * 3600, 1_700_000_000 - age * 3600))
    config = module_config("docs", DOCUMENTS_SERVER, "--root", str(folder), "--poll-interval", "0.1")
    computer = computer_factory(config, start=False, channels=ChannelOptions(update_debounce=QUICK))
    announced = Announcements()
    computer.add_update_listener(announced)
    computer.start()
    announced.settle()
    return computer, announced, folder


def test_a_folder_of_files_is_a_catalogue_that_follows_its_changes(folder_finder: Any) -> None:
    computer, announced, folder = folder_finder
    page = computer.finder()
    assert page.total_count == 5 and {d.server for d in page.documents} == {"docs"}
    assert [d.file_type for d in page.documents] == ["md", "md", "md", "txt", "csv"]  # newest first
    assert page.documents[0].title == "2026 年第一季度经营报告"
    assert computer.finder(file_type="csv").documents[0].title == "sales-2026-q1"

    (folder / "added.md").write_text("# An added note\n\nAbout the quarterly budget.\n", encoding="utf-8")
    announced.wait_for(FINDER, 2)
    assert announced.settle() == 2  # exactly one announcement for the new file
    assert computer.finder(keywords=["added note"]).documents[0].title == "An added note"

    (folder / "added.md").write_text("# A renamed note\n\nStill about the budget.\n", encoding="utf-8")
    announced.wait_for(FINDER, 3)
    titles = [d.title for d in computer.finder().documents]
    assert "A renamed note" in titles and "An added note" not in titles
    (folder / "added.md").unlink()
    announced.wait_for(FINDER, 4)
    assert computer.finder().total_count == 5
