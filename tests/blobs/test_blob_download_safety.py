"""`Agent.get_blob(handle, path)` never harms the user's file, and never holds more than the
announced `total_size`: a real Computer refusing the handle, and a hostile Computer (a bare
Socket.IO client answering `client:get_blob` with whatever the test scripts) whose bytes
do not match their sha256, run past `total_size`, or start past it."""

from __future__ import annotations

import base64
import hashlib
import stat
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from agent.silent_computer import SilentComputer
from computer.helpers import stdio_config
from office_parts import connected_computer, joined_agent, serving

from smcp_sync.blobs import from_bytes
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BlobError, SMCPError

pytestmark = pytest.mark.timeout(60)

T = 10.0
OFFICE = "download-office"
KEPT = b"the user's own file, written before the download\n"
HANDLE = "blob_" + "B" * 43


@pytest.fixture
def server_url(no_leaks: None) -> Iterator[str]:
    with serving() as server:
        yield server.url


@pytest.fixture
def kept_file(tmp_path: Path) -> Path:
    target = tmp_path / "report.bin"
    target.write_bytes(KEPT)
    target.chmod(0o640)
    return target


def untouched(target: Path) -> None:
    """The target holds what it held, and nothing else was left beside it."""
    assert target.read_bytes() == KEPT
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def chunk(payload: dict, data: bytes, *, total_size: int, sha256: str, offset: int | None = None, eof: bool) -> dict:
    return {
        "blob_handle": payload["blob_handle"], "mime_type": "application/octet-stream", "total_size": total_size,
        "sha256": sha256, "chunk_offset": payload["chunk_offset"] if offset is None else offset, "eof": eof,
        "blob": base64.b64encode(data).decode("ascii"), "req_id": payload["req_id"],
    }


def hostile_download(server_url: str, answer: Callable[[dict], Any], target: Path) -> tuple[BlobError, int]:
    """Download from a Computer answering `client:get_blob` with `answer`: the error, and
    how many chunk requests the Agent made before giving up."""
    hostile = SilentComputer("hostile", answering={events.GET_BLOB: answer}).start(server_url, OFFICE)
    try:
        with joined_agent("alice", server_url, OFFICE, timeout=T) as agent:
            with pytest.raises(BlobError) as excinfo:
                agent.get_blob("hostile", HANDLE, target, timeout=T)
        return excinfo.value, hostile.requests(events.GET_BLOB)
    finally:
        hostile.close()


def test_a_refused_handle_leaves_the_existing_file_as_it_was(server_url: str, kept_file: Path) -> None:
    with connected_computer("pc", [stdio_config("tools")], server_url, OFFICE, timeout=T) as computer, \
            joined_agent("alice", server_url, OFFICE, timeout=T) as agent:
        with pytest.raises(BlobError) as excinfo:
            agent.get_blob("pc", HANDLE, kept_file)
        assert (excinfo.value.code, excinfo.value.details["reason"]) == (4018, "invalid_handle")
        untouched(kept_file)

        fresh = b"the new bytes" * 1000
        handle = computer.blobs.mint(from_bytes(fresh), office_id=OFFICE, agent="alice", mime_type="").handle
        assert agent.get_blob("pc", handle, kept_file) == kept_file
    assert kept_file.read_bytes() == fresh
    assert stat.S_IMODE(kept_file.stat().st_mode) == 0o640  # replaced in place, its mode kept
    assert [p.name for p in kept_file.parent.iterdir()] == [kept_file.name]


def test_bytes_that_do_not_match_their_sha256_leave_the_existing_file_as_it_was(server_url: str, kept_file: Path) -> None:
    lie = b"not what the sha256 says"

    def answer(payload: dict) -> dict:
        return chunk(payload, lie, total_size=len(lie), sha256=hashlib.sha256(b"other").hexdigest(), eof=True)

    error, requests = hostile_download(server_url, answer, kept_file)
    assert (error.code, error.details["reason"]) == (4018, "integrity")
    assert requests == 2  # read again from 0 once, as for a source rewritten mid-read
    untouched(kept_file)


def test_more_bytes_than_total_size_are_refused_at_the_first_chunk(server_url: str, kept_file: Path) -> None:
    flood = b"x" * 256 * 1024

    def answer(payload: dict) -> dict:  # announces 10 bytes, sends 256 KiB per chunk, never ends
        return chunk(payload, flood, total_size=10, sha256=hashlib.sha256(b"0123456789").hexdigest(), eof=False)

    error, requests = hostile_download(server_url, answer, kept_file)
    assert (error.code, error.details["reason"]) == (4018, "range")
    assert requests == 1  # refused, not buffered chunk after chunk
    untouched(kept_file)


def test_a_chunk_starting_past_total_size_is_refused(server_url: str, kept_file: Path) -> None:
    def answer(payload: dict) -> dict:
        return chunk(payload, b"tail", total_size=10, sha256=hashlib.sha256(b"0123456789").hexdigest(), offset=11,
                     eof=True)

    error, requests = hostile_download(server_url, answer, kept_file)
    assert (error.code, error.details["reason"]) == (4018, "range")
    assert requests == 1
    untouched(kept_file)


def test_a_failed_download_into_memory_raises_a_coded_error(server_url: str) -> None:
    hostile = SilentComputer("hostile", answering={
        events.GET_BLOB: lambda p: chunk(p, b"y" * 100, total_size=3, sha256="0" * 64, eof=False)}).start(server_url, OFFICE)
    try:
        with joined_agent("alice", server_url, OFFICE, timeout=T) as agent, pytest.raises(SMCPError) as excinfo:
            agent.get_blob("hostile", HANDLE, timeout=T)
    finally:
        hostile.close()
    assert (excinfo.value.code, excinfo.value.details["reason"]) == (4018, "range")
