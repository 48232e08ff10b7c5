"""Skills across SDKs (issue 13): the official a2c-smcp 0.4.2 Agent reads our Computer's
skills through our Server, and our Agent reads the skills of their Computer, each from a
real MCP server (child process) serving a mounted SKILL package."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

import pytest

from smcp_sync import Computer
from smcp_sync.agent.requests import NotHandledError
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.computer import SkillsOptions

from computer.helpers import RESOURCE_SERVER, stdio_config, write_state
from interop.harness import agent_results, run_official_agent, start_official_agent, start_official_computer
from office_parts import joined_agent, serving

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

KEY = "test-key"  # the harness scripts' default key
REVIEW_MD = "---\nname: code-review\ndescription: Reviews code\n---\n# Code review\n\nSee references/big.txt.\n"
BODY = "# Code review\n\nSee references/big.txt.\n"
BIG = "y" * 100_000  # text over both SDKs' inline budget (32 KiB)
PNG = bytes(range(256)) * 16


@pytest.fixture(scope="module")
def their_python() -> Path:
    from interop.venv import CURRENT, official_sdk_python

    return official_sdk_python(CURRENT)


@pytest.fixture
def skill_server(tmp_path: Path) -> dict[str, Any]:
    """A resource_server (our test MCP server) listing one mounted package: `mount_dir`."""
    folder = tmp_path / "code-review"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(REVIEW_MD, encoding="utf-8")
    (folder / "references" / "big.txt").write_text(BIG, encoding="utf-8")
    (folder / "logo.png").write_bytes(PNG)
    entry = {"uri": "skill://com.test.skills/code-review", "name": "code-review",
             "_meta": {"source": "mounted", "mount_dir": str(folder)}}
    write_state(tmp_path / "state.json", [entry])
    return stdio_config("skills", "--state", str(tmp_path / "state.json"), script=RESOURCE_SERVER)


def test_their_agent_reads_our_computers_skills(their_python: Path, skill_server: dict[str, Any]) -> None:
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving(auth=KEY))
        computer = stack.enter_context(Computer("c-ours", [skill_server]))
        computer.connect(server.url, "o-sk", auth={"api_key": KEY}, timeout=20)
        name = "mcp:skills:code-review"
        steps = [
            {"op": "get_skills", "computer": "c-ours"},
            {"op": "get_skill", "computer": "c-ours", "name": name},
            {"op": "get_skill", "computer": "c-ours", "name": name, "rel_path": "references/big.txt"},
            {"op": "get_skill", "computer": "c-ours", "name": name, "rel_path": "logo.png"},
            {"op": "get_skill", "computer": "c-ours", "name": "Not A Name"},
            {"op": "get_skill", "computer": "c-ours", "name": name, "rel_path": "../x"},
        ]
        results = agent_results(run_official_agent(their_python, server.url, "o-sk", "a-sdk", steps, auth_via="sdk"))
    listed, entry, big, png, bad_name, traversal = results[1:]  # results[0]: the join
    assert listed["ok"], listed
    [skill] = listed["result"]["skills"]
    assert (skill["name"], skill["source"], skill["description"]) == (name, "mcp:skills", "Reviews code")
    assert entry["result"]["body"] == BODY and entry["result"]["sha256"] == hashlib.sha256(BODY.encode()).hexdigest()
    assert big["result"]["body"] == BIG  # their SDK drained our blob handle into the body
    assert (png["result"]["mime_type"], png["size"], png["sha256"]) == ("image/png", len(PNG), hashlib.sha256(PNG).hexdigest())
    assert not bad_name["ok"] and "4016" in bad_name["error"]
    assert not traversal["ok"] and "4017" in traversal["error"]


def test_their_agent_hears_our_user_skills_folder_change(their_python: Path, tmp_path: Path) -> None:
    """docs/computer/skills.md, Skills that announce changes: a package written into our Computer's watched
    folder reaches their Agent as notify:update_skills, and their get_skills lists it."""
    user = tmp_path / "user"
    user.mkdir()
    steps = [
        {"op": "wait_notify", "name": "notify:update_skills", "match": {"computer": "c-ours"}, "timeout": 30},
        {"op": "get_skills", "computer": "c-ours"},
    ]
    with serving(auth=KEY) as server, Computer("c-ours", skills=SkillsOptions(user_folder=user)) as computer:
        computer.connect(server.url, "o-up", auth={"api_key": KEY}, timeout=20)
        agent = start_official_agent(their_python, server.url, "o-up", "a-sdk", steps, auth_via="sdk")
        try:
            agent.wait_for(lambda e: e.get("event") == "result" and e.get("op") == "join", 60)
            (user / "fresh").mkdir()
            (user / "fresh" / "SKILL.md").write_text("---\nname: fresh\ndescription: New here\n---\nHi.\n")
            agent.wait_for(lambda e: e.get("event") in ("exit", "connect_failed"), 90)
            agent.wait_exit(30)
        finally:
            agent.stop()
        heard, listed = agent_results(agent.snapshot())[1:]
    assert heard["ok"], heard
    assert [skill["name"] for skill in listed["result"]["skills"]] == ["fresh"]


def test_our_agent_reads_their_computers_skills(
    their_python: Path, skill_server: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn: Any
) -> None:
    monkeypatch.setenv("A2C_SKILL_HOME", str(tmp_path / "their-home"))  # their Computer stages skills there
    with serving(auth=KEY) as server:
        spawn(start_official_computer(their_python, server.url, "o-th", "c-theirs", [skill_server], auth_via="auth"))
        with joined_agent("a-ours", server.url, "o-th", timeout=20, auth={"api_key": KEY}) as agent:
            skills = agent.get_skills("c-theirs", timeout=30)
            assert [(s.name, s.source) for s in skills] == [("mcp:skills:code-review", "mcp:skills")]
            entry = agent.get_skill("c-theirs", "mcp:skills:code-review", timeout=30)
            assert (entry.body, entry.mime_type) == (BODY, "text/markdown")
            logo = agent.get_skill("c-theirs", "mcp:skills:code-review", "logo.png", timeout=30)
            assert logo.blob_handle is not None and logo.total_size == len(PNG)
            assert agent.get_blob("c-theirs", logo.blob_handle, timeout=30) == PNG
            for name, rel_path, code in (("Not A Name", None, 4016), ("mcp:skills:nope", None, 4014),
                                         ("mcp:skills:code-review", "../x", 4017)):
                with pytest.raises(SMCPError) as caught:
                    agent.get_skill("c-theirs", name, rel_path, timeout=30)
                assert caught.value.code == code


def test_a_computer_without_skills_keeps_its_cached_tools(spawn: Any) -> None:
    """A 0.1.6 Computer answers the skill events it does not know with an empty ack: the
    Agent's skills refresh finds nothing to cache, and must not take that for a Computer
    that left (its tools stay cached)."""
    from interop.harness import echo_mcp_config
    from interop.venv import LEGACY, official_sdk_python

    legacy = official_sdk_python(LEGACY)
    with serving(auth=KEY) as server:
        spawn(start_official_computer(legacy, server.url, "o-old", "c-old", echo_mcp_config(legacy), auth_via="auth"))
        with joined_agent("a-ours", server.url, "o-old", timeout=20, auth={"api_key": KEY}) as agent:
            tools = agent.tool_cache.wait_for("c-old", 30)
            assert tools
            with pytest.raises(NotHandledError):
                agent.get_skills("c-old", timeout=20)
            agent._refresh("c-old", agent.get_skills)  # what a notice's refresh lane runs
            assert agent.tool_cache.get("c-old") == tools
