"""``archive`` packages (skill.md §3 mode B): downloaded from a loopback HTTP server,
checked against their sha256, unpacked safely; served by a real MCP server (child process)."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from smcp_sync import Computer
from smcp_sync.computer import SkillsOptions

from computer.helpers import FAST, RESOURCE_SERVER, stdio_config, write_state
from skills.http_files import http_files

pytestmark = pytest.mark.timeout(60)

SKILL_MD = b"---\nname: packed\ndescription: Comes in an archive\n---\nUnpacked.\n"


def tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def root(leaf: str, url: str, kind: str, sha256: str | None = None) -> dict[str, Any]:
    meta = {"source": "archive", "archive_uri": url, "archive_format": kind}
    if sha256 is not None:
        meta["archive_sha256"] = sha256
    return {"uri": f"skill://com.test.archives/{leaf}", "name": leaf, "_meta": meta}


def test_archives_are_fetched_checked_and_unpacked(tmp_path: Path) -> None:
    good_tar = tar_gz({"SKILL.md": SKILL_MD, "docs/guide.md": b"# Guide\n"})
    good_zip = zipped({"SKILL.md": SKILL_MD.replace(b"packed", b"zipped"), "a.txt": b"zip\n"})
    evil = tar_gz({"SKILL.md": SKILL_MD.replace(b"packed", b"evil"), "../escape.txt": b"x"})
    files = {"good.tar.gz": good_tar, "good.zip": good_zip, "evil.tar.gz": evil}
    with http_files(files) as base:
        entries = [
            root("packed", f"{base}/good.tar.gz", "tar.gz", hashlib.sha256(good_tar).hexdigest()),
            root("zipped", f"{base}/good.zip", "zip"),
            root("tampered", f"{base}/good.tar.gz", "tar.gz", "0" * 64),  # wrong sha256: left out
            root("evil", f"{base}/evil.tar.gz", "tar.gz"),  # a path out of the package: left out
            root("missing", f"{base}/nope.zip", "zip"),  # 404: left out
        ]
        write_state(tmp_path / "state.json", entries)
        config = stdio_config("arch", "--state", str(tmp_path / "state.json"), script=RESOURCE_SERVER)
        with Computer("unpacker", [config], policy=FAST, skills=SkillsOptions(home=tmp_path / "home")) as computer:
            skills = computer.skills()
            assert [s.name for s in skills] == ["mcp:arch:packed", "mcp:arch:zipped"]
            assert computer.skill_resource("mcp:arch:packed", "docs/guide.md").read(0, 100) == b"# Guide\n"
            assert computer.skill_resource("mcp:arch:zipped").read(0, 100) == b"Unzipped.\n"  # the body, renamed too
            assert Path(skills[0].path).is_relative_to(tmp_path / "home")
    assert not (tmp_path / "home" / "mcp" / "arch" / "escape.txt").exists()
    assert not any(p.name == "escape.txt" for p in tmp_path.rglob("*"))
