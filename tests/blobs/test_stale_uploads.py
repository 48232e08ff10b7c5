"""Parts of uploads cut short by a crash (no session of this Computer writes them) are
collected when the Computer starts and while uploads run, once nothing wrote them for
the upload idle timeout; a recent one (maybe another Computer's upload sharing the
folder) and the landed files stay."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path
from typing import Iterator

import pytest
from computer.helpers import wait_until
from office_parts import connected_computer, joined_agent, serving

from smcp_sync.agent.requests import ask, new_req_id
from smcp_sync.protocol import events
from smcp_sync.protocol.models import PutBlobReq, PutBlobRet
from smcp_sync.computer import BlobOptions

pytestmark = pytest.mark.timeout(60)

T = 20.0
OFFICE = "stale-office"


@pytest.fixture
def server_url(no_leaks: None) -> Iterator[str]:
    with serving() as server:
        yield server.url


def crashed_part(landing: Path, name: str, age: float) -> Path:
    part = landing / ".parts" / name
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes(b"half an upload")
    then = time.time() - age
    os.utime(part, (then, then))
    return part


def test_stale_parts_are_collected_at_start_and_while_uploads_run(server_url: str, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    old = crashed_part(landing, "0123abcd.part", age=3600)
    recent = crashed_part(landing, "4567ef01.part", age=0)
    landed = landing / "0000_report.pdf"
    landed.write_bytes(b"a finished upload")
    with connected_computer("pc", [], server_url, OFFICE, timeout=T, blobs=BlobOptions(landing_folder=landing, upload_idle_timeout=3.0)), \
            joined_agent("alice", server_url, OFFICE, timeout=T) as agent:
        assert not old.exists()
        assert recent.exists() and landed.read_bytes() == b"a finished upload"

        digest = hashlib.sha256(b"0123456789").hexdigest()
        request = PutBlobReq(agent="alice", req_id=new_req_id(), computer="pc", chunk_offset=0, eof=False,
                             blob=base64.b64encode(b"0123").decode(), total_size=10, sha256=digest)
        ask(agent._connection, events.PUT_BLOB, request, PutBlobRet, T)  # a session: the sweeper runs
        later = crashed_part(landing, "89abcdef.part", age=3600)
        wait_until(lambda: not later.exists(), 10, "a stale part collected by the sweeper")
    assert landed.exists()
