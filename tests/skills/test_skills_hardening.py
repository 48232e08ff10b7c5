"""Issue 21's skill findings, each through a Computer hosting real MCP servers (child
processes serving `skill://` packages from a state file): what a hostile URI may write,
what an orphaned skill's handle serves, how front matter is read, how the warm-up and
`close()` treat a slow archive download, and the limits of a package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from computer.helpers import FAST, RESOURCE_SERVER, stdio_config, write_state
from office_parts import connected_computer, joined_agent, serving

from smcp_sync import Computer
from smcp_sync.blobs import BlobHandles
from smcp_sync.computer import allow_all
from smcp_sync.protocol.errors import BlobError

pytestmark = pytest.mark.timeout(90)

T = 20.0
NOTES_MD = "---\nname: notes\ndescription: Keeps notes\n---\nWrite things down.\n"
BIG = "x" * 100_000 + "\n"  # over the inline budget: served through a blob handle


def served_package(host: str, path: str, files: dict[str, str]) -> list[dict[str, Any]]:
    """State entries of a ``resources``-mode package at ``skill://host/path``."""
    root = f"skill://{host}/{path}"
    return [{"uri": root, "name": path, "_meta": {"source": "resources"}}] + [
        {"uri": f"{root}/{rel}", "name": rel, "text": text} for rel, text in files.items()
    ]


def skill_server(tmp_path: Path, name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    state = tmp_path / f"{name}.json"
    write_state(state, entries)
    return stdio_config(name, "--state", str(state), script=RESOURCE_SERVER)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_a_package_uri_decoding_to_dot_or_dot_dot_writes_nothing_outside_its_folder(tmp_path: Path) -> None:
    entries = [
        *served_package("evil", "%2E%2E", {"SKILL.md": NOTES_MD}),
        *served_package("evil", "%2e", {"SKILL.md": NOTES_MD.replace("notes", "dot")}),
        *served_package("evil", "sneaky", {"SKILL.md": NOTES_MD.replace("notes", "sneaky"),
                                           "%2E%2E/%2E%2E/escaped.md": "out\n"}),
        *served_package("evil", "fine", {"SKILL.md": NOTES_MD.replace("notes", "fine")}),
    ]
    home = tmp_path / "home"
    with Computer("c", [skill_server(tmp_path, "evil", entries)], policy=FAST, skill_home=home,
                  confirm=allow_all) as computer:
        assert [skill.name for skill in computer.skills()] == ["mcp:evil:fine"]
        staged = files_under(home)
    [fine] = [p for p in staged]
    assert fine.relative_to(home / "mcp" / "evil").parts[1:] == ("fine", "SKILL.md")


def test_a_package_relisted_under_another_uri_is_staged_and_no_log_line_shows_a_host_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    for leaf in ("first", "second"):  # the same files, listed under another URI by the next run
        server = skill_server(tmp_path, "pkgs", served_package("pkgs", leaf, {"SKILL.md": NOTES_MD, "a.md": "A\n"}))
        with Computer("c", [server], policy=FAST, skill_home=home, confirm=allow_all) as computer:
            [skill] = computer.skills()
            assert (skill.name, Path(skill.path).name) == ("mcp:pkgs:notes", leaf)
            assert computer.skill_resource("mcp:pkgs:notes", "a.md").read(0, 10) == b"A\n"
    assert not [r.getMessage() for r in caplog.records if str(tmp_path) in r.getMessage()]


def test_an_orphaned_skills_blob_handle_answers_4018_not_bytes(tmp_path: Path) -> None:
    server = skill_server(tmp_path, "remote", served_package("remote", "notes", {"SKILL.md": NOTES_MD, "big.txt": BIG}))
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "orphans", timeout=T, policy=FAST,
                               skill_home=tmp_path / "home") as computer, \
            joined_agent("reader", smcp.url, "orphans", timeout=T) as agent:
        handle = agent.get_skill("c", "mcp:remote:notes", "big.txt", timeout=T).blob_handle
        assert agent.get_blob("c", handle, timeout=T) == BIG.encode()
        computer.stop_server("remote")
        with pytest.raises(BlobError) as caught:
            agent.get_blob("c", handle, timeout=T)
        assert (caught.value.code, caught.value.details["reason"]) == (4018, "gone")
        computer.start_server("remote", timeout=T)
        assert agent.get_blob("c", handle, timeout=T) == BIG.encode()  # offered again: readable again


def test_skill_md_handles_count_against_the_blob_memory_bound(tmp_path: Path) -> None:
    long_md = NOTES_MD + "More words. " * 50  # ~630 bytes once its front matter is stripped
    server = skill_server(tmp_path, "remote", served_package("remote", "notes", {"SKILL.md": long_md}))
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "memory", timeout=T, policy=FAST, skill_inline_budget=100,
                               skill_home=tmp_path / "home") as computer, \
            joined_agent("reader", smcp.url, "memory", timeout=T) as agent:
        computer.blobs = BlobHandles(max_memory=1000)  # room for one SKILL.md held in memory, not two
        first = agent.get_skill("c", "mcp:remote:notes", timeout=T).blob_handle
        second = agent.get_skill("c", "mcp:remote:notes", timeout=T).blob_handle
        assert agent.get_blob("c", second, timeout=T) == long_md.split("---\n", 2)[2].encode()
        with pytest.raises(BlobError) as caught:
            agent.get_blob("c", first, timeout=T)
        assert (caught.value.code, caught.value.details["reason"]) == (4018, "gone")


FOLDED_MD = """---
name: code-review   # the name an Agent sees is mcp:<server>:code-review
description: >-
  Reviews code:
  finds bugs
metadata:
  author: smcp-sync tests
  owners:
    team: tools
tags: [review, 2]
---
Review it.
"""


def test_front_matter_is_yaml_and_a_package_with_invalid_yaml_is_left_out_with_its_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entries = [
        *served_package("yaml", "review", {"SKILL.md": FOLDED_MD}),
        *served_package("yaml", "broken", {"SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\nBody.\n"}),
    ]
    server = skill_server(tmp_path, "yaml", entries)
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "yaml", timeout=T, policy=FAST,
                               skill_home=tmp_path / "home") as computer, \
            joined_agent("reader", smcp.url, "yaml", timeout=T) as agent:
        [review] = agent.get_skills("c", timeout=T)
        body = agent.get_skill("c", "mcp:yaml:code-review", timeout=T).body
        listed = computer.skills()
    assert (review.name, review.description, review.tags) == ("mcp:yaml:code-review", "Reviews code: finds bugs", ["review", "2"])
    assert review.skill_metadata == {"author": "smcp-sync tests", "owners": {"team": "tools"}}
    assert body == "Review it.\n" and [s.name for s in listed] == ["mcp:yaml:code-review"]
    [reason] = [r.getMessage() for r in caplog.records if "skill://yaml/broken" in r.getMessage()]
    assert "front matter is not valid YAML" in reason and "line 4" in reason  # the closing ---
    assert str(tmp_path) not in reason
