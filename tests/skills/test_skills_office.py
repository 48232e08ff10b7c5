"""Skills end to end (spec-0.3/skill.md, issue 13): an Agent asks through a real Server a
Computer whose real MCP servers (child processes) serve SKILL packages, ``mounted`` and
``resources``; plus the user's own packages. Listing, reading inline, a large file as a
blob handle, the update notice after a change, and each bad input with its code."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync import Computer
from smcp_sync.computer import allow_all
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.computer import ChannelOptions, SkillsOptions

from computer.helpers import FAST, RESOURCE_SERVER, stdio_config, write_state
from office_parts import connected_computer, joined_agent, serving

pytestmark = pytest.mark.timeout(90)

T = 20.0
OFFICE = "skills-office"
REVIEW_MD = """---
name: code-review
description: "Reviews code: finds bugs and style problems"
license: MIT
allowed-tools: [Read, Grep]
metadata:
  author: smcp-sync tests
---
# Code review

Read `references/checklist.md` first.
"""
NOTES_MD = "---\nname: notes\ndescription: Keeps notes\n---\nWrite things down.\n"
SECRET = "OPENAI_API_KEY=sk-live-not-for-agents\n"
BIG = "x" * 100_000 + "\n"  # text over the inline budget: a blob handle
PNG = bytes(range(256)) * 8


def package(folder: Path, files: dict[str, str | bytes]) -> Path:
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return folder


def mounted(host: str, leaf: str, folder: Path, **meta: Any) -> dict[str, Any]:
    entry_meta = {"source": "mounted", "mount_dir": str(folder), **meta}
    return {"uri": f"skill://{host}/{leaf}", "name": leaf, "mimeType": "text/markdown", "_meta": entry_meta}


class SkillNotices:
    """Records the Agent's notify:update_skills for one Computer."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def __call__(self, notification: Any) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_beyond(self, count: int, timeout: float = T) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.count > count, timeout), "no notify:update_skills came"


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("skills")
    review = package(
        root / "review",
        {
            "SKILL.md": REVIEW_MD,
            "references/checklist.md": "- tests pass\n",
            "references/big.txt": BIG,
            "assets/logo.png": PNG,
            ".skillenv": "API_KEY=secret\n",
        },
    )
    package(root / "outside", {"secret.txt": "not in any package\n"})
    os.symlink(root / "outside" / "secret.txt", review / "escape.txt")
    user = root / "user"
    package(user / "my-helper", {"SKILL.md": "---\nname: other\ndescription: Helps me\n---\nHelp.\n"})
    package(user / "Bad_Name", {"SKILL.md": "---\nname: bad\ndescription: skipped\n---\n"})
    tools_state = root / "tools.json"
    write_state(tools_state, [mounted("com.test.skills", "code-review", review, version="1.2.0")])
    remote_state = root / "remote.json"
    write_state(
        remote_state,
        [
            {"uri": "skill://com.test.remote/notes", "name": "notes", "_meta": {"source": "resources"}},
            {"uri": "skill://com.test.remote/notes/SKILL.md", "name": "SKILL.md", "text": NOTES_MD},
            {"uri": "skill://com.test.remote/notes/how/to.md", "name": "to.md", "text": "# How to\n"},
            {"uri": "skill://com.test.remote/notes/.skillenv", "name": ".skillenv", "text": SECRET},
            {"uri": "skill://com.test.remote/notes/conf/.SkillEnv", "name": ".SkillEnv", "text": SECRET},
            {"uri": "window://com.test.remote/main", "name": "main", "text": "a window, not a skill"},
            {"uri": "window://com.test.remote/%2Eskillenv", "name": "env", "text": SECRET},
        ],
    )
    servers = [
        stdio_config("Skill Tools", "--state", str(tools_state), script=RESOURCE_SERVER),
        stdio_config("remote", "--state", str(remote_state), script=RESOURCE_SERVER),
    ]
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving())
        computer = stack.enter_context(
            connected_computer(
                "skilled",
                servers,
                server.url,
                OFFICE,
                timeout=T,
                policy=FAST,
                skills=SkillsOptions(user_folder=user, home=root / "home"),
                channels=ChannelOptions(update_debounce=0.05),
            )
        )
        agent = stack.enter_context(joined_agent("reader", server.url, OFFICE, timeout=T))
        notices = SkillNotices()
        agent.on(events.UPDATE_SKILLS_NOTIFICATION, notices)
        yield {"agent": agent, "computer": computer, "review": review, "root": root, "notices": notices,
               "tools_state": tools_state}


def by_name(skills: list[Any]) -> dict[str, Any]:
    return {skill.name: skill for skill in skills}


def test_skills_of_every_source_are_listed_with_their_front_matter(office: dict[str, Any]) -> None:
    skills = office["agent"].get_skills("skilled", timeout=T)
    assert [s.name for s in skills] == ["mcp:Skill_Tools:code-review", "mcp:remote:notes", "my-helper"]
    review, notes, helper = skills
    assert (review.source, review.uri, review.version) == ("mcp:Skill_Tools", "skill://com.test.skills/code-review", "1.2.0")
    assert review.description == "Reviews code: finds bugs and style problems"
    assert (review.license, review.allowed_tools, review.skill_metadata) == ("MIT", ["Read", "Grep"], {"author": "smcp-sync tests"})
    assert review.path == str(office["review"].resolve())  # mounted: used in place
    assert (notes.source, notes.uri) == ("mcp:remote", "skill://com.test.remote/notes")
    assert Path(notes.path).is_relative_to(office["root"] / "home") and (Path(notes.path) / "how" / "to.md").is_file()
    assert (helper.source, helper.uri, helper.description) == ("user", None, "Helps me")
    assert office["agent"].skill_cache.get("skilled") == tuple(skills)


def test_skill_md_comes_inline_without_its_front_matter(office: dict[str, Any]) -> None:
    answer = office["agent"].get_skill("skilled", "mcp:Skill_Tools:code-review", timeout=T)
    body = REVIEW_MD.split("---\n", 2)[2]
    assert (answer.rel_path, answer.mime_type, answer.body, answer.blob_handle) == ("SKILL.md", "text/markdown", body, None)
    assert (answer.total_size, answer.sha256) == (len(body.encode()), hashlib.sha256(body.encode()).hexdigest())
    other = office["agent"].get_skill("skilled", "mcp:Skill_Tools:code-review", "references/checklist.md", timeout=T)
    assert other.body == "- tests pass\n"
    staged = office["agent"].get_skill("skilled", "mcp:remote:notes", "how/to.md", timeout=T)
    assert (staged.body, staged.mime_type) == ("# How to\n", "text/markdown")
    assert office["agent"].get_skill("skilled", "my-helper", timeout=T).body == "Help.\n"


@pytest.mark.parametrize(("rel_path", "data", "mime"), [("references/big.txt", BIG.encode(), "text/plain"),
                                                        ("assets/logo.png", PNG, "image/png")])
def test_large_text_and_binary_files_come_as_blob_handles(
    office: dict[str, Any], rel_path: str, data: bytes, mime: str
) -> None:
    agent = office["agent"]
    answer = agent.get_skill("skilled", "mcp:Skill_Tools:code-review", rel_path, timeout=T, rehydrate=False)
    assert answer.body is None and answer.blob_handle
    assert (answer.mime_type, answer.total_size, answer.sha256) == (mime, len(data), hashlib.sha256(data).hexdigest())
    assert office["agent"].get_blob("skilled", answer.blob_handle, timeout=T) == data


@pytest.mark.parametrize(
    ("name", "rel_path", "code", "reason"),
    [
        ("mcp:Skill_Tools:unknown", None, 4014, None),
        ("never-installed", None, 4014, None),
        ("bad name!!", None, 4016, None),
        ("a:b:c", None, 4016, None),
        ("mcp:Skill_Tools:code-review", "../outside/secret.txt", 4017, "traversal"),
        ("mcp:Skill_Tools:code-review", "/etc/passwd", 4017, "traversal"),
        ("mcp:Skill_Tools:code-review", "escape.txt", 4017, "traversal"),  # a symlink out of the package
        ("mcp:Skill_Tools:code-review", ".skillenv", 4017, "forbidden"),
        ("mcp:Skill_Tools:code-review", "references/.skillenv", 4017, "forbidden"),  # absent: still forbidden
        ("mcp:Skill_Tools:code-review", "references/missing.md", 4017, "not_found"),
    ],
)
def test_bad_input_gets_the_spec_code(
    office: dict[str, Any], name: str, rel_path: str | None, code: int, reason: str | None
) -> None:
    with pytest.raises(SMCPError) as caught:
        office["agent"].get_skill("skilled", name, rel_path, timeout=T)
    assert caught.value.code == code
    assert caught.value.details.get("reason") == reason


@pytest.mark.parametrize(
    "uri",
    [
        "skill://com.test.remote/notes/.skillenv",
        "skill://com.test.remote/notes/.SKILLENV",
        "skill://com.test.remote/notes/%2Eskillenv",
        "skill://com.test.remote/notes/%252eSkillEnv",
        "skill://com.test.remote/notes/conf/.SkillEnv",
        "window://com.test.remote/%2Eskillenv",
    ],
)
def test_read_resource_never_serves_a_secret_file(office: dict[str, Any], uri: str) -> None:
    """The MCP server would hand `.skillenv` out: the Computer refuses before asking it."""
    with pytest.raises(SMCPError) as caught:
        office["agent"].read_resource("skilled", uri, mcp_server="remote", timeout=T)
    assert (caught.value.code, caught.value.details["reason"]) == (4017, "forbidden")
    assert "sk-live" not in repr(caught.value.details) + caught.value.message


def test_the_secret_is_there_to_leak_and_plain_files_are_still_served(office: dict[str, Any]) -> None:
    manager = office["computer"]._manager  # the MCP server itself, below the boundary
    leaked = manager.read_resource("remote", "skill://com.test.remote/notes/.skillenv", T)
    assert "sk-live" in leaked[0].text
    plain = office["agent"].read_resource("skilled", "skill://com.test.remote/notes/how/to.md", mcp_server="remote", timeout=T)
    assert plain == "# How to\n"


def test_listings_never_show_a_secret_file(office: dict[str, Any]) -> None:
    agent = office["agent"]
    page = agent.get_resources("skilled", "remote", timeout=T)
    uris = [resource.uri for resource in page.resources]
    assert "skill://com.test.remote/notes/how/to.md" in uris and "window://com.test.remote/main" in uris
    assert not [uri for uri in uris if "skillenv" in uri.lower()], uris
    desktop = agent.get_desktop("skilled", timeout=T)
    assert "a window, not a skill" in repr(desktop) and "sk-live" not in repr(desktop)


def test_a_staged_secret_stays_on_the_computer(office: dict[str, Any]) -> None:
    """Staging may write `.skillenv` beside the package's scripts; no Agent route reads it."""
    agent = office["agent"]
    notes = by_name(agent.get_skills("skilled", timeout=T))["mcp:remote:notes"]
    assert (Path(notes.path) / ".skillenv").read_text(encoding="utf-8") == SECRET
    for rel_path in (".skillenv", ".SKILLENV", "conf/.SkillEnv", "conf/.skillenv"):
        with pytest.raises(SMCPError) as caught:
            agent.get_skill("skilled", "mcp:remote:notes", rel_path, timeout=T)
        assert (caught.value.code, caught.value.details["reason"]) == (4017, "forbidden"), rel_path


def test_a_file_over_the_size_cap_is_refused_before_any_byte(tmp_path: Path) -> None:
    folder = package(tmp_path / "pkg", {"SKILL.md": NOTES_MD, "data.bin": b"\0" * 2048})
    state = tmp_path / "state.json"
    write_state(state, [mounted("com.test.cap", "notes", folder)])
    config = stdio_config("cap", "--state", str(state), script=RESOURCE_SERVER)
    with Computer("capped", [config], policy=FAST, confirm=allow_all, skills=SkillsOptions(max_size=1024)) as computer:
        with pytest.raises(SMCPError) as caught:
            computer.skill_resource("mcp:cap:notes", "data.bin")
    assert (caught.value.code, caught.value.details["reason"], caught.value.details["total_size"]) == (4017, "too_large", 2048)


def test_a_changed_skill_list_is_announced_and_the_cache_follows(office: dict[str, Any]) -> None:
    agent, notices = office["agent"], office["notices"]
    agent.get_skills("skilled", timeout=T)
    seen = notices.count
    extra = package(office["root"] / "extra", {"SKILL.md": "---\nname: extra\ndescription: Added later\n---\nMore.\n"})
    entries = [mounted("com.test.skills", "code-review", office["review"], version="1.2.0"),
               mounted("com.test.skills", "extra", extra)]
    result = agent.call_tool("skilled", "Skill_Tools__set_resources", {"resources": entries}, timeout=T)
    assert not result.is_error, result.text
    notices.wait_beyond(seen)
    names = [s.name for s in agent.skill_cache.wait_for("skilled", T, unlike=agent.skill_cache.get("skilled")) or ()]
    assert "mcp:Skill_Tools:extra" in names
    assert agent.get_skill("skilled", "mcp:Skill_Tools:extra", timeout=T).body == "More.\n"


def test_an_edited_package_is_announced_and_read_anew(office: dict[str, Any]) -> None:
    """The server says the package changed (resources/updated for its root): re-staged, announced."""
    agent, notices, review = office["agent"], office["notices"], office["review"]
    seen = notices.count
    checklist = review / "references" / "checklist.md"
    checklist.write_text("- tests pass\n- docs updated\n", encoding="utf-8")
    result = agent.call_tool("skilled", "Skill_Tools__touch", {"uri": "skill://com.test.skills/code-review"}, timeout=T)
    assert not result.is_error, result.text
    notices.wait_beyond(seen)
    answer = agent.get_skill("skilled", "mcp:Skill_Tools:code-review", "references/checklist.md", timeout=T)
    assert answer.body == "- tests pass\n- docs updated\n"


def test_a_stopped_server_takes_its_skills_out_until_it_is_back(office: dict[str, Any]) -> None:
    agent, computer = office["agent"], office["computer"]
    computer.servers.stop("remote")
    try:
        assert "mcp:remote:notes" not in [s.name for s in agent.get_skills("skilled", timeout=T)]
        with pytest.raises(SMCPError) as caught:
            agent.get_skill("skilled", "mcp:remote:notes", timeout=T)
        assert caught.value.code == 4014
    finally:
        computer.servers.start("remote", timeout=T)
    assert "mcp:remote:notes" in [s.name for s in agent.get_skills("skilled", timeout=T)]
    assert agent.get_skill("skilled", "mcp:remote:notes", timeout=T).body == "Write things down.\n"
