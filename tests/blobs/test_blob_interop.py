"""Blob transfer with the official SDK 0.4.2's Agent through our Server to our Computer:
its tool call drains our handle by itself, its get_blob and put_blob speak to ours; and
our Agent fetching the over-budget tool result of their Computer and uploading to it (its
landing root comes from a settings.json given to it; without one it refuses, 4019)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from pathlib import Path
from typing import Iterator

import pytest

from interop.harness import agent_results, by_op, run_official_agent, start_official_computer
from interop.venv import official_sdk_python
from smcp_sync import Computer
from smcp_sync.blobs import from_bytes
from smcp_sync.protocol.errors import BlobError
from smcp_sync.computer import BlobOptions
from computer.helpers import stdio_config
from office_parts import connected_computer, joined_agent, serving

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

T = 30.0
OFFICE = "blob-interop"


@pytest.fixture(scope="module")
def their_python() -> Path:
    return official_sdk_python("0.4.2")


@pytest.fixture(scope="module")
def server_url(their_python: Path) -> Iterator[str]:
    with serving() as server:
        yield server.url


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("interop") / "landing"


@pytest.fixture(scope="module")
def computer(server_url: str, landing: Path) -> Iterator[Computer]:
    with connected_computer("pc", [stdio_config("tools")], server_url, OFFICE, timeout=T, blobs=BlobOptions(landing_folder=landing)) as pc:
        yield pc


def run(their_python: Path, url: str, steps: list[dict]) -> list[dict]:
    return agent_results(run_official_agent(their_python, url, OFFICE, "their-agent", steps, auth_via="sdk"))


def test_their_agent_fetches_our_big_tool_result_and_our_blobs(their_python, server_url, computer: Computer) -> None:
    image = random.Random(5).randbytes(600_000)
    blob = random.Random(6).randbytes(1_300_000)
    handle = computer.blobs.mint(from_bytes(blob), office_id=OFFICE, agent="their-agent", mime_type="").handle
    steps = [
        {"op": "tool_call", "computer": "pc", "tool": "tools__image", "params": {"size": len(image), "seed": 5},
         "timeout": 30},
        {"op": "get_blob", "computer": "pc", "handle": handle, "timeout": 30},
        {"op": "get_blob", "computer": "pc", "handle": "blob_forged", "timeout": 30},
    ]
    results = run(their_python, server_url, steps)
    [call] = by_op(results, "tool_call")
    drained = call["result"]["content"][1]  # our handle, drained by their Agent and put back in place
    assert drained["type"] == "image" and base64.b64decode(drained["data"]) == image
    good, forged = by_op(results, "get_blob")
    assert good["ok"] and (good["size"], good["sha256"]) == (len(blob), hashlib.sha256(blob).hexdigest())
    assert not forged["ok"] and forged["error_type"].endswith("BlobTransferError")  # their reading of our 4018
    assert forged["error"] == "unknown blob handle"


def test_their_agent_uploads_to_our_landing_folder(their_python, server_url, computer: Computer, landing: Path) -> None:
    steps = [{"op": "put_blob", "computer": "pc", "size": 700_000, "seed": 9, "name_hint": "../their.bin", "timeout": 30}]
    [put] = by_op(run(their_python, server_url, steps), "put_blob")
    assert put["ok"], put
    landed = Path(put["result"]["landing_path"])
    assert landed.parent == landing.resolve() and landed.name.endswith("_their.bin")
    assert landed.read_bytes() == random.Random(9).randbytes(700_000)
    assert put["result"]["sha256"] == put["sha256"]


def test_our_agent_fetches_their_computers_big_tool_result(their_python, server_url, spawn) -> None:
    config = stdio_config("tools", default_tool_meta={"auto_apply": True})
    config["server_parameters"].update(env=None, cwd=None, encoding="utf-8", encoding_error_handler="strict")
    spawn(start_official_computer(their_python, server_url, "their-office", "their-pc", config, auth_via="sdk"))
    image = random.Random(3).randbytes(500_000)
    with joined_agent("our-agent", server_url, "their-office", timeout=T) as agent:
        params = {"size": len(image), "seed": 3}
        result = agent.call_tool("their-pc", "tools__image", params, timeout=T, rehydrate=False)
        item = result.content[1]
        assert item.data == "" and item.meta["a2c_total_size"] == len(image)
        assert item.meta["a2c_sha256"] == hashlib.sha256(image).hexdigest()
        assert agent.fetch_result_blobs("their-pc", result) == [image]
        filled = agent.call_tool("their-pc", "tools__image", params, timeout=T).content[1]  # by itself, by default
        assert base64.b64decode(filled.data) == image and not filled.meta
        with pytest.raises(BlobError) as excinfo:
            agent.get_blob("their-pc", "forged")
    assert excinfo.value.code == 4018 and excinfo.value.details.get("reason") == "invalid_handle"


def test_our_agent_uploads_to_their_computers_landing_root(their_python, server_url, spawn, tmp_path: Path) -> None:
    root = tmp_path / "their-landing"
    root.mkdir()
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"landingRoot": str(root)}))
    spawn(start_official_computer(their_python, server_url, "up-office", "up-pc", [], auth_via="sdk", settings=settings))
    spawn(start_official_computer(their_python, server_url, "closed-office", "closed-pc", [], auth_via="sdk"))
    data = random.Random(4).randbytes(900_000)
    with joined_agent("our-agent", server_url, "up-office", timeout=T) as agent:
        answer = agent.put_blob("up-pc", data, name_hint="../ours.bin")
    landed = Path(answer.landing_path)
    assert landed.parent.resolve() == root.resolve() and landed.read_bytes() == data
    assert answer.sha256 == hashlib.sha256(data).hexdigest() and answer.total_size == len(data)
    with joined_agent("our-agent", server_url, "closed-office", timeout=T) as agent:
        with pytest.raises(BlobError) as excinfo:
            agent.put_blob("closed-pc", b"refused")
    assert excinfo.value.code == 4019 and excinfo.value.details.get("reason") == "forbidden"
