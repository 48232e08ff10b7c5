"""Blob transfer end to end: Agent -> our Server -> Computer (a real MCP server as a child
process for the tool result), each failure with the code and reason of the spec."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import random
import time
from pathlib import Path
from typing import Iterator

import pytest

from smcp_sync import Agent, Computer
from smcp_sync.agent.requests import ask, new_req_id
from smcp_sync.blobs import from_bytes
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BlobError, SMCPError
from smcp_sync.protocol.models import ImageContent, PutBlobReq, PutBlobRet, TextContent
from smcp_sync.computer import BlobOptions
from computer.helpers import stdio_config, wait_until
from office_parts import connected_computer, joined_agent, serving

T = 20.0
OFFICE = "blob-office"


def image_bytes(size: int, seed: int) -> bytes:
    """What the tool server's `image` tool returns."""
    return random.Random(seed).randbytes(size)


def reason_of(excinfo: pytest.ExceptionInfo[SMCPError]) -> tuple[int, str]:
    return excinfo.value.code, excinfo.value.details.get("reason")


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with serving() as server:
        yield server.url


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside") / "landing"


@pytest.fixture(scope="module")
def computer(server_url: str, landing: Path) -> Iterator[Computer]:
    blobs = BlobOptions(landing_folder=landing, upload_max_bytes=3 * 1024 * 1024, upload_idle_timeout=1.0)
    with connected_computer("pc", [stdio_config("tools")], server_url, OFFICE, timeout=T, blobs=blobs) as computer:
        yield computer


@pytest.fixture(scope="module")
def agent(server_url: str, computer: Computer) -> Iterator[Agent]:
    with joined_agent("alice", server_url, OFFICE, timeout=T) as agent:
        yield agent


def minted_for(computer: Computer, agent: str, data: bytes) -> str:
    return computer.blobs.mint(from_bytes(data), office_id=OFFICE, agent=agent, mime_type="application/x-test").handle


# -- tool results over the inline budget ------------------------------------------------


def test_a_big_image_result_comes_as_a_handle_and_is_fetched_in_one_call(agent: Agent, tmp_path: Path) -> None:
    expected = image_bytes(700_000, 7)
    result = agent.call_tool("pc", "image", {"size": len(expected), "seed": 7}, timeout=T, rehydrate=False)
    caption, image = result.content
    assert isinstance(caption, TextContent) and caption.text == f"{len(expected)} bytes"
    assert isinstance(image, ImageContent) and image.data == "" and image.mime_type == "image/png"
    assert image.meta["a2c_total_size"] == len(expected)
    assert image.meta["a2c_sha256"] == hashlib.sha256(expected).hexdigest()
    assert agent.fetch_result_blobs("pc", result) == [expected]
    [saved] = agent.fetch_result_blobs("pc", result, tmp_path)
    assert Path(saved).parent == tmp_path and Path(saved).read_bytes() == expected


def test_a_small_image_stays_inline(agent: Agent) -> None:
    result = agent.call_tool("pc", "image", {"size": 1000, "seed": 1}, timeout=T)
    image = result.content[1]
    assert base64.b64decode(image.data) == image_bytes(1000, 1) and not (image.meta or {})
    assert agent.fetch_result_blobs("pc", result) == []


# -- get_blob ---------------------------------------------------------------------------


def test_get_blob_streams_to_a_file_with_progress(agent: Agent, computer: Computer, tmp_path: Path) -> None:
    data = os.urandom(2 * 1024 * 1024 + 5)
    seen: list[tuple[int, int]] = []
    path = agent.get_blob("pc", minted_for(computer, "alice", data), tmp_path / "out.bin",
                          progress=lambda done, total: seen.append((done, total)))
    assert Path(path).read_bytes() == data
    assert len(seen) > 1 and seen[-1] == (len(data), len(data))


def test_an_empty_blob_is_empty_bytes(agent: Agent, computer: Computer) -> None:
    assert agent.get_blob("pc", minted_for(computer, "alice", b"")) == b""


def test_another_agents_handle_is_forbidden(agent: Agent, computer: Computer, tmp_path: Path) -> None:
    handle = minted_for(computer, "bob", b"secret bytes")  # offices have one agent at a time: bob came before
    with pytest.raises(BlobError) as excinfo:
        agent.get_blob("pc", handle, tmp_path / "stolen")
    assert reason_of(excinfo) == (4018, "forbidden")
    assert not (tmp_path / "stolen").exists()


def test_another_offices_agent_gets_no_bytes(server_url: str, computer: Computer) -> None:
    handle = minted_for(computer, "alice", b"secret bytes")
    with joined_agent("alice", server_url, "other-office", timeout=T) as outsider:
        with pytest.raises(SMCPError) as excinfo:
            outsider.get_blob("pc", handle)
    assert excinfo.value.code == 404  # the Server finds no computer "pc" in that office


def test_a_handle_minted_in_another_office_is_forbidden(agent: Agent, computer: Computer) -> None:
    handle = computer.blobs.mint(from_bytes(b"x"), office_id="elsewhere", agent="alice", mime_type="").handle
    with pytest.raises(BlobError) as excinfo:
        agent.get_blob("pc", handle)
    assert reason_of(excinfo) == (4018, "forbidden")


def test_a_forged_handle_is_invalid(agent: Agent) -> None:
    with pytest.raises(BlobError) as excinfo:
        agent.get_blob("pc", "blob_" + "A" * 43)
    assert reason_of(excinfo) == (4018, "invalid_handle")


def test_an_offset_past_the_end_is_out_of_range(agent: Agent, computer: Computer) -> None:
    from smcp_sync.protocol.models import GetBlobReq, GetBlobRet

    handle = minted_for(computer, "alice", b"0123456789")
    request = GetBlobReq(agent="alice", req_id=new_req_id(), computer="pc", blob_handle=handle, chunk_offset=11)
    with pytest.raises(BlobError) as excinfo:
        ask(agent._connection, events.GET_BLOB, request, GetBlobRet, T)
    assert reason_of(excinfo) == (4018, "range")


def test_an_expired_handle_is_gone(server_url: str) -> None:
    with connected_computer("short", [], server_url, "o3", timeout=T, blobs=BlobOptions(handle_ttl=0.5)) as short, \
            joined_agent("carol", server_url, "o3", timeout=T) as carol:
        handle = short.blobs.mint(from_bytes(b"soon gone"), office_id="o3", agent="carol", mime_type="").handle
        assert carol.get_blob("short", handle) == b"soon gone"
        time.sleep(0.6)
        with pytest.raises(BlobError) as excinfo:
            carol.get_blob("short", handle)
    assert reason_of(excinfo) == (4018, "gone")


# -- put_blob ---------------------------------------------------------------------------


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_put_blob_lands_a_file_with_its_sha256(agent: Agent, landing: Path, tmp_path: Path) -> None:
    source = tmp_path / "report.pdf"
    source.write_bytes(os.urandom(1024 * 1024 + 3))
    answer = agent.put_blob("pc", source)
    landed = Path(answer.landing_path)
    assert landed.parent == landing.resolve() and landed.name.endswith("_report.pdf")
    assert landed.read_bytes() == source.read_bytes()
    assert answer.sha256 == hashlib.sha256(source.read_bytes()).hexdigest() and answer.total_size == 1024 * 1024 + 3


def test_upload_names_cannot_leave_the_landing_folder(agent: Agent, landing: Path) -> None:
    outside = landing.parent
    before = files_under(outside) - files_under(landing)
    for hint in ("../../escape.txt", "/etc/passwd", "..", "..\\..\\win.txt", ".hidden"):
        landed = Path(agent.put_blob("pc", b"payload", name_hint=hint).landing_path)
        assert landed.parent == landing.resolve() and not landed.name.startswith(".")
        assert landed.read_bytes() == b"payload"
    assert files_under(outside) - files_under(landing) == before


def put_chunk(agent: Agent, computer: str = "pc", **fields) -> PutBlobRet:
    request = PutBlobReq(agent=agent.name, req_id=new_req_id(), computer=computer, **fields)
    return ask(agent._connection, events.PUT_BLOB, request, PutBlobRet, T)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def test_a_wrong_sha256_is_refused_and_nothing_lands(agent: Agent, landing: Path) -> None:
    before = files_under(landing)
    with pytest.raises(BlobError) as excinfo:
        put_chunk(agent, chunk_offset=0, eof=True, blob=b64(b"abc"), total_size=3, sha256="0" * 64)
    assert reason_of(excinfo) == (4019, "integrity")
    assert files_under(landing) == before


def test_an_upload_over_the_cap_is_refused(agent: Agent, landing: Path) -> None:
    before = files_under(landing)
    with pytest.raises(BlobError) as excinfo:
        agent.put_blob("pc", b"x" * (3 * 1024 * 1024 + 1))
    assert reason_of(excinfo) == (4019, "too_large")
    assert files_under(landing) == before


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"chunk_offset": 0, "eof": True, "blob": b64(b"abc"), "sha256": "0" * 64}, "invalid_declaration"),
        ({"chunk_offset": 0, "eof": True, "blob": b64(b"abc"), "total_size": 3, "sha256": "nope"}, "invalid_declaration"),
        ({"chunk_offset": 0, "eof": True, "blob": b64(b"abcd"), "total_size": 3, "sha256": "0" * 64}, "range"),
        ({"chunk_offset": 0, "eof": False, "blob": b64(b"a"), "upload_id": "made-up"}, "invalid_upload"),
    ],
)
def test_bad_upload_chunks_are_refused(agent: Agent, fields: dict, reason: str) -> None:
    with pytest.raises(BlobError) as excinfo:
        put_chunk(agent, **fields)
    assert reason_of(excinfo) == (4019, reason)


def test_chunks_out_of_order_are_refused(agent: Agent) -> None:
    data = b"0123456789"
    first = put_chunk(agent, chunk_offset=0, eof=False, blob=b64(data[:4]), total_size=10,
                      sha256=hashlib.sha256(data).hexdigest())
    with pytest.raises(BlobError) as excinfo:
        put_chunk(agent, upload_id=first.upload_id, chunk_offset=5, eof=True, blob=b64(data[5:]))
    assert reason_of(excinfo) == (4019, "range")


def test_another_agent_cannot_continue_an_upload(server_url: str, tmp_path: Path) -> None:
    data = b"0123456789"
    with connected_computer("shared", [], server_url, "o2", timeout=T, blobs=BlobOptions(landing_folder=tmp_path)):
        with joined_agent("bob", server_url, "o2", timeout=T) as bob:
            first = put_chunk(bob, "shared", chunk_offset=0, eof=False, blob=b64(data[:4]), total_size=10,
                              sha256=hashlib.sha256(data).hexdigest())
        with joined_agent("eve", server_url, "o2", timeout=T) as eve:
            with pytest.raises(BlobError) as excinfo:
                put_chunk(eve, "shared", upload_id=first.upload_id, chunk_offset=4, eof=True, blob=b64(data[4:]))
    assert reason_of(excinfo) == (4019, "invalid_upload")
    assert not any(p.suffix != ".part" for p in files_under(tmp_path))


def test_an_abandoned_upload_expires_with_its_part(agent: Agent, landing: Path) -> None:
    digest = hashlib.sha256(b"0123456789").hexdigest()
    first = put_chunk(agent, chunk_offset=0, eof=False, blob=b64(b"0123"), total_size=10, sha256=digest)
    part = landing / ".parts" / f"{first.upload_id}.part"
    assert part.exists()
    wait_until(lambda: not part.exists(), timeout=T, what="the abandoned part removed")
    with pytest.raises(BlobError) as excinfo:
        put_chunk(agent, upload_id=first.upload_id, chunk_offset=4, eof=True, blob=b64(b"456789"))
    assert reason_of(excinfo) == (4019, "invalid_upload")
    assert not any(first.upload_id in p.name for p in files_under(landing))


def test_without_a_landing_folder_uploads_are_refused(server_url: str) -> None:
    with connected_computer("nolanding", [], server_url, "o4", timeout=T), \
            joined_agent("dave", server_url, "o4", timeout=T) as dave:
        with pytest.raises(BlobError) as excinfo:
            dave.put_blob("nolanding", b"data")
    assert reason_of(excinfo) == (4019, "forbidden")


def test_close_drops_unfinished_uploads(server_url: str, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        pc = stack.enter_context(connected_computer("closing", [], server_url, "o5", timeout=T, blobs=BlobOptions(landing_folder=tmp_path)))
        erin = stack.enter_context(joined_agent("erin", server_url, "o5", timeout=T))
        request = PutBlobReq(agent="erin", req_id=new_req_id(), computer="closing", chunk_offset=0, eof=False,
                             blob=b64(b"01"), total_size=10, sha256="0" * 64)
        ask(erin._connection, events.PUT_BLOB, request, PutBlobRet, T)
        assert files_under(tmp_path)
        pc.close()
        assert files_under(tmp_path) == set()
