"""`smcp-sync agent ... blob get|put` against a real Server and Computer."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from smcp_sync.blobs import from_bytes
from smcp_sync.cli import main
from smcp_sync.computer import BlobOptions
from office_parts import connected_computer, serving

T = 20.0


def test_blob_put_then_get_round_trips_a_file(tmp_path: Path, capsys) -> None:
    landing = tmp_path / "landing"
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(600_000))
    with serving() as server, connected_computer("pc", [], server.url, "cli", timeout=T, blobs=BlobOptions(landing_folder=landing)) as pc:
        agent = ["agent", "--url", server.url, "--office", "cli", "--name", "me", "--timeout", "10"]
        assert main([*agent, "--json", "blob", "put", "pc", str(source), "--name", "../up.bin"]) == 0
        answer = json.loads(capsys.readouterr().out)
        landed = Path(answer["landing_path"])
        assert landed.parent == landing.resolve() and landed.name.endswith("_up.bin")
        assert landed.read_bytes() == source.read_bytes()
        assert answer["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()

        handle = pc.blobs.mint(from_bytes(source.read_bytes()), office_id="cli", agent="me", mime_type="").handle
        out = tmp_path / "back.bin"
        assert main([*agent, "blob", "get", "pc", handle, "-o", str(out)]) == 0
        assert out.read_bytes() == source.read_bytes()
        assert f"wrote {len(source.read_bytes())} bytes to {out}" in capsys.readouterr().out

        assert main([*agent, "blob", "get", "pc", "blob_forged", "-o", str(tmp_path / "none")]) == 1
        assert "[4018]" in capsys.readouterr().err and not (tmp_path / "none").exists()
