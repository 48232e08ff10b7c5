"""Blobs that arrive by themselves (docs/computer/blobs.md): through a
real Server, a Computer with a real MCP server answers a large image and a large skill
file with blob handles, and the Agent fills them in before returning — unless the call
or the Agent opts out, or the answer is over the cap."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import random
from typing import Any, Iterator

import pytest

from smcp_sync import Agent
from smcp_sync.agent.rehydrate import Rehydration
from smcp_sync.blobs import from_bytes
from smcp_sync.protocol.models import CallToolResult, ImageContent
from smcp_sync.computer import SkillsOptions

from computer.helpers import stdio_config
from office_parts import connected_computer, joined_agent, serving

pytestmark = pytest.mark.timeout(90)

T = 20.0
OFFICE = "rehydrate"
SIZE = 700_000  # over the Computer's 32 KiB inline budget


def image_bytes(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)  # what the test tool server's `image` returns


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    user = tmp_path_factory.mktemp("skills")
    (user / "guide" / "references").mkdir(parents=True)
    (user / "guide" / "SKILL.md").write_text("---\nname: guide\ndescription: A long guide\n---\nRead on.\n")
    (user / "guide" / "references" / "long.md").write_text("# Long\n" + "A line of the guide.\n" * 10_000)
    (user / "guide" / "logo.png").write_bytes(image_bytes(50_000, 5))
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serving())
        computer = stack.enter_context(
            connected_computer("pc", [stdio_config("tools")], server.url, OFFICE, timeout=T, skills=SkillsOptions(user_folder=user))
        )
        agent = stack.enter_context(joined_agent("alice", server.url, OFFICE, timeout=T))
        yield {"url": server.url, "computer": computer, "agent": agent}


@contextlib.contextmanager
def own_agent(**options: Any) -> Iterator[Agent]:
    """An Agent with `options` in an office of its own (one Agent per office)."""
    with serving() as server, connected_computer("pc", [stdio_config("tools")], server.url, OFFICE, timeout=T):
        with joined_agent("bob", server.url, OFFICE, timeout=T, **options) as agent:
            yield agent


def the_image(result: CallToolResult) -> ImageContent:
    item = result.content[-1]
    assert isinstance(item, ImageContent)
    return item


def test_a_large_image_arrives_filled_in_with_its_sha256(office: dict[str, Any]) -> None:
    expected = image_bytes(SIZE, 7)
    image = the_image(office["agent"].call_tool("pc", "image", {"size": SIZE, "seed": 7}, timeout=T))
    assert hashlib.sha256(base64.b64decode(image.data)).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert image.mime_type == "image/png" and not image.meta  # the handle's keys are gone


def test_a_submitted_call_arrives_filled_in_too(office: dict[str, Any]) -> None:
    future = office["agent"].submit_tool_call("pc", "image", {"size": SIZE, "seed": 8}, timeout=T)
    assert base64.b64decode(the_image(future.result(timeout=T)).data) == image_bytes(SIZE, 8)


def test_opting_out_per_call_or_per_agent_keeps_the_handle(office: dict[str, Any]) -> None:
    kept = the_image(office["agent"].call_tool("pc", "image", {"size": SIZE, "seed": 9}, timeout=T, rehydrate=False))
    assert kept.data == "" and kept.meta["a2c_total_size"] == SIZE
    with own_agent(rehydrate_blobs=False) as bob:
        result = bob.call_tool("pc", "image", {"size": SIZE, "seed": 9}, timeout=T)
        assert the_image(result).data == ""
        assert bob.fetch_result_blobs("pc", result) == [image_bytes(SIZE, 9)]  # the explicit way stays
        filled = bob.call_tool("pc", "image", {"size": SIZE, "seed": 9}, timeout=T, rehydrate=True)
        assert base64.b64decode(the_image(filled).data) == image_bytes(SIZE, 9)


def test_progress_follows_a_large_blob_as_it_arrives(office: dict[str, Any]) -> None:
    seen: list[tuple[str, int, int]] = []
    with own_agent(rehydrate_progress=lambda *args: seen.append(args)) as agent:
        image = the_image(agent.call_tool("pc", "image", {"size": SIZE, "seed": 12}, timeout=T))
    assert base64.b64decode(image.data) == image_bytes(SIZE, 12)
    assert seen and seen[-1][1:] == (SIZE, SIZE) and seen[0][0].startswith("blob_")
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)


def test_an_answer_over_the_cap_keeps_its_handle(office: dict[str, Any]) -> None:
    with own_agent(rehydrate_max_bytes=SIZE - 1) as carol:
        result = carol.call_tool("pc", "image", {"size": SIZE, "seed": 10}, timeout=T)
        assert the_image(result).data == "" and carol.fetch_result_blobs("pc", result) == [image_bytes(SIZE, 10)]
    with pytest.raises(ValueError, match="rehydrate_max_bytes"):
        Agent("dave", rehydrate_max_bytes=-1)


def test_a_blob_larger_than_announced_is_not_taken_past_the_cap(office: dict[str, Any]) -> None:
    agent: Agent = office["agent"]
    handle = office["computer"].blobs.mint(
        from_bytes(image_bytes(SIZE, 11)), office_id=OFFICE, agent="alice", mime_type="image/png"
    ).handle
    lying = CallToolResult(content=[ImageContent(
        type="image", data="", mime_type="image/png", meta={"a2c_blob_handle": handle, "a2c_total_size": 10}
    )])
    capped = Rehydration(agent.get_blob, max_bytes=1000)
    assert the_image(capped.result("pc", lying, T)).data == ""  # 10 announced, SIZE sent: stopped at the first chunk
    generous = Rehydration(agent.get_blob, max_bytes=SIZE)
    assert base64.b64decode(the_image(generous.result("pc", lying, T)).data) == image_bytes(SIZE, 11)


def test_a_long_text_skill_file_arrives_as_a_body_and_a_binary_one_as_a_handle(office: dict[str, Any]) -> None:
    agent: Agent = office["agent"]
    text = agent.get_skill("pc", "guide", "references/long.md", timeout=T)
    assert text.blob_handle is None and text.body == "# Long\n" + "A line of the guide.\n" * 10_000
    assert hashlib.sha256(text.body.encode()).hexdigest() == text.sha256
    kept = agent.get_skill("pc", "guide", "references/long.md", timeout=T, rehydrate=False)
    assert kept.body is None and kept.blob_handle is not None
    logo = agent.get_skill("pc", "guide", "logo.png", timeout=T)
    assert logo.body is None and agent.get_blob("pc", logo.blob_handle) == image_bytes(50_000, 5)


def test_the_cli_shows_a_large_image_as_its_handle_not_its_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    from smcp_sync.cli import main

    with serving() as server, connected_computer("pc", [stdio_config("tools")], server.url, "cli", timeout=T):
        params = json.dumps({"size": SIZE, "seed": 13})
        assert main(["agent", "--url", server.url, "--office", "cli", "call", "pc", "image", params]) == 0
    shown = capsys.readouterr().out
    assert f"{SIZE} bytes" in shown and "a2c_blob_handle" in shown and len(shown) < 2000
