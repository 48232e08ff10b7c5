"""The blob core on its own: handles bound to office and agent, expiry, chunks."""

from __future__ import annotations

import base64
import hashlib

import pytest

from smcp_sync.blobs import BlobHandles, chunk_size, from_bytes, from_path, from_reader, read_chunk
from smcp_sync.protocol.errors import BlobError

DATA = bytes(range(256)) * 40


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reason(excinfo: pytest.ExceptionInfo[BlobError]) -> tuple[int, str]:
    return excinfo.value.code, excinfo.value.details["reason"]


def test_a_handle_reads_back_in_chunks_with_the_whole_sha256() -> None:
    handles = BlobHandles()
    minted = handles.mint(from_bytes(DATA), office_id="o", agent="a", mime_type="application/x-test")
    got, offset = b"", 0
    while True:
        chunk = read_chunk(handles.resolve(minted.handle, office_id="o", agent="a"), offset, 1000, "r")
        assert chunk.sha256 == hashlib.sha256(DATA).hexdigest() and chunk.total_size == len(DATA)
        got += base64.b64decode(chunk.blob)
        offset += len(base64.b64decode(chunk.blob))
        if chunk.eof:
            break
    assert got == DATA and chunk.mime_type == "application/x-test"


def test_handles_are_opaque_and_unguessable() -> None:
    handles = BlobHandles()
    first = handles.mint(from_bytes(b"x"), office_id="o", agent="a", mime_type="").handle
    second = handles.mint(from_bytes(b"x"), office_id="o", agent="a", mime_type="").handle
    assert first != second and len(first) > 40


@pytest.mark.parametrize(
    ("office", "agent", "expected"),
    [("o", "b", "forbidden"), ("p", "a", "forbidden"), (None, "a", "forbidden")],
)
def test_only_the_office_and_agent_it_was_minted_for_can_read(office, agent, expected) -> None:
    handles = BlobHandles()
    handle = handles.mint(from_bytes(DATA), office_id="o", agent="a", mime_type="").handle
    with pytest.raises(BlobError) as excinfo:
        handles.resolve(handle, office_id=office, agent=agent)
    assert reason(excinfo) == (4018, expected)


def test_a_forged_handle_is_invalid() -> None:
    with pytest.raises(BlobError) as excinfo:
        BlobHandles().resolve("blob_made-up", office_id="o", agent="a")
    assert reason(excinfo) == (4018, "invalid_handle")


def test_an_expired_handle_is_gone_and_its_source_released() -> None:
    clock = Clock()
    handles = BlobHandles(ttl=10, clock=clock)
    handle = handles.mint(from_bytes(DATA), office_id="o", agent="a", mime_type="").handle
    clock.now = 9.9
    handles.resolve(handle, office_id="o", agent="a")
    clock.now = 10.0
    with pytest.raises(BlobError) as excinfo:
        handles.resolve(handle, office_id="o", agent="a")
    assert reason(excinfo) == (4018, "gone")
    assert handle not in handles._live


def test_in_memory_bytes_are_bounded_oldest_dropped_first() -> None:
    handles = BlobHandles(max_memory=2500)
    first = handles.mint(from_bytes(b"a" * 1000), office_id="o", agent="a", mime_type="").handle
    second = handles.mint(from_bytes(b"b" * 1000), office_id="o", agent="a", mime_type="").handle
    third = handles.mint(from_bytes(b"c" * 1000), office_id="o", agent="a", mime_type="").handle
    with pytest.raises(BlobError) as excinfo:
        handles.resolve(first, office_id="o", agent="a")
    assert reason(excinfo) == (4018, "gone")
    for handle in (second, third):
        handles.resolve(handle, office_id="o", agent="a")


def test_the_number_of_live_handles_is_bounded() -> None:
    handles = BlobHandles(max_handles=2)
    minted = [handles.mint(from_bytes(b"x"), office_id="o", agent="a", mime_type="").handle for _ in range(3)]
    with pytest.raises(BlobError) as excinfo:
        handles.resolve(minted[0], office_id="o", agent="a")
    assert reason(excinfo) == (4018, "gone")
    handles.resolve(minted[2], office_id="o", agent="a")


def test_offsets_past_the_end_are_out_of_range_and_the_end_is_an_empty_eof() -> None:
    minted = BlobHandles().mint(from_bytes(DATA), office_id="o", agent="a", mime_type="")
    for offset in (len(DATA) + 1, -1):
        with pytest.raises(BlobError) as excinfo:
            read_chunk(minted, offset, 100, "r")
        assert reason(excinfo) == (4018, "range")
    end = read_chunk(minted, len(DATA), 100, "r")
    assert end.eof and end.blob == ""


def test_an_empty_source_is_one_eof_chunk() -> None:
    minted = BlobHandles().mint(from_bytes(b""), office_id="o", agent="a", mime_type="")
    chunk = read_chunk(minted, 0, 10, "r")
    assert chunk.eof and chunk.total_size == 0 and chunk.blob == ""


def test_a_file_rewritten_after_minting_is_gone(tmp_path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(DATA)
    minted = BlobHandles().mint(from_path(path), office_id="o", agent="a", mime_type="")
    assert base64.b64decode(read_chunk(minted, 0, 10, "r").blob) == DATA[:10]
    path.write_bytes(DATA + b"more")
    with pytest.raises(BlobError) as excinfo:
        read_chunk(minted, 0, 10, "r")
    assert reason(excinfo) == (4018, "gone")


def test_a_range_reader_serves_its_ranges() -> None:
    source = from_reader(len(DATA), lambda offset, length: DATA[offset : offset + length])
    assert source.read(250, 10) == DATA[250:260] and source.sha256 == hashlib.sha256(DATA).hexdigest()


def test_chunk_size_keeps_the_base64_answer_under_the_servers_limit() -> None:
    assert chunk_size(None, 100_000) == (100_000 - 4096) // 4 * 3
    assert chunk_size(None, 10_000_000) == 256 * 1024
    assert chunk_size(1000, 10_000_000) == 1000
    assert chunk_size(None, None) <= 1_000_000 * 3 // 4
