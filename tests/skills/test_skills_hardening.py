"""Issue 21's skill findings, each through a Computer hosting real MCP servers (child
processes serving `skill://` packages from a state file): what a hostile URI may write,
what an orphaned skill's handle serves, how front matter is read, how the warm-up and
`close()` treat a slow archive download, and the limits of a package."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import io
import tarfile
import threading
import tracemalloc
from pathlib import Path
from typing import Any, Iterator

import attrs

import pytest
from computer.helpers import (
    FAST,
    RESOURCE_SERVER,
    http_config,
    start_http_server,
    stdio_config,
    stop,
    wait_until,
    write_state,
)
from office_parts import connected_computer, joined_agent, serving
from skills.http_files import http_files

from smcp_sync import Agent, Computer
from smcp_sync.agent.requests import ask, new_req_id
from smcp_sync.blobs import BlobHandles
from smcp_sync.computer import allow_all
from smcp_sync.computer.channels import skill_archives
from smcp_sync.protocol import events
from smcp_sync.protocol.errors import BlobError
from smcp_sync.protocol.models import GetSkillReq, GetSkillRet
from smcp_sync.computer import SkillsOptions

pytestmark = pytest.mark.timeout(90)

T = 20.0
NOTES_MD = "---\nname: notes\ndescription: Keeps notes\n---\nWrite things down.\n"
BIG = "x" * 100_000 + "\n"  # over the inline budget: served through a blob handle


def served_package(host: str, path: str, files: dict[str, str]) -> list[dict[str, Any]]:
    """State entries of a ``resources``-mode package at ``skill://host/path``."""
    root = f"skill://{host}/{path}"
    return [{"uri": root, "name": path, "_meta": {"source": "resources"}}] + [
        {"uri": f"{root}/{rel}", "name": rel, "text": text} for rel, text in files.items()
    ]


def skill_server(tmp_path: Path, name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    state = tmp_path / f"{name}.json"
    write_state(state, entries)
    return stdio_config(name, "--state", str(state), script=RESOURCE_SERVER)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_a_package_uri_decoding_to_dot_or_dot_dot_writes_nothing_outside_its_folder(tmp_path: Path) -> None:
    entries = [
        *served_package("evil", "%2E%2E", {"SKILL.md": NOTES_MD}),
        *served_package("evil", "%2e", {"SKILL.md": NOTES_MD.replace("notes", "dot")}),
        *served_package("evil", "sneaky", {"SKILL.md": NOTES_MD.replace("notes", "sneaky"),
                                           "%2E%2E/%2E%2E/escaped.md": "out\n"}),
        *served_package("evil", "fine", {"SKILL.md": NOTES_MD.replace("notes", "fine")}),
    ]
    home = tmp_path / "home"
    with Computer("c", [skill_server(tmp_path, "evil", entries)], policy=FAST, confirm=allow_all, skills=SkillsOptions(home=home)) as computer:
        assert [skill.name for skill in computer.skills()] == ["mcp:evil:fine"]
        staged = files_under(home)
    [fine] = [p for p in staged]
    assert fine.relative_to(home / "mcp" / "evil").parts[1:] == ("fine", "SKILL.md")


def test_a_package_relisted_under_another_uri_is_staged_and_no_log_line_shows_a_host_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    for leaf in ("first", "second"):  # the same files, listed under another URI by the next run
        server = skill_server(tmp_path, "pkgs", served_package("pkgs", leaf, {"SKILL.md": NOTES_MD, "a.md": "A\n"}))
        with Computer("c", [server], policy=FAST, confirm=allow_all, skills=SkillsOptions(home=home)) as computer:
            [skill] = computer.skills()
            assert (skill.name, Path(skill.path).name) == ("mcp:pkgs:notes", leaf)
            assert computer.skill_resource("mcp:pkgs:notes", "a.md").read(0, 10) == b"A\n"
    assert not [r.getMessage() for r in caplog.records if str(tmp_path) in r.getMessage()]


def test_an_orphaned_skills_blob_handle_answers_4018_not_bytes(tmp_path: Path) -> None:
    server = skill_server(tmp_path, "remote", served_package("remote", "notes", {"SKILL.md": NOTES_MD, "big.bin": BIG}))
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "orphans", timeout=T, policy=FAST, skills=SkillsOptions(home=tmp_path / "home")) as computer, \
            joined_agent("reader", smcp.url, "orphans", timeout=T) as agent:
        handle = agent.get_skill("c", "mcp:remote:notes", "big.bin", timeout=T, rehydrate=False).blob_handle
        assert agent.get_blob("c", handle, timeout=T) == BIG.encode()
        computer.servers.stop("remote")
        with pytest.raises(BlobError) as caught:
            agent.get_blob("c", handle, timeout=T)
        assert (caught.value.code, caught.value.details["reason"]) == (4018, "gone")
        computer.servers.start("remote", timeout=T)
        assert agent.get_blob("c", handle, timeout=T) == BIG.encode()  # offered again: readable again


def skill_md_handle(agent: Agent, computer: str, name: str) -> str:
    """The blob handle the Computer answers for a SKILL.md over its inline budget (asked on
    the wire: `Agent.get_skill` may fetch such a text by itself)."""
    request = GetSkillReq(agent=agent.name, req_id=new_req_id(), computer=computer, name=name)
    answer = ask(agent._connection, events.GET_SKILL, request, GetSkillRet, T)
    assert answer.body is None and answer.blob_handle is not None
    return answer.blob_handle


def test_skill_md_handles_count_against_the_blob_memory_bound(tmp_path: Path) -> None:
    long_md = NOTES_MD + "More words. " * 50  # ~630 bytes once its front matter is stripped
    server = skill_server(tmp_path, "remote", served_package("remote", "notes", {"SKILL.md": long_md}))
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "memory", timeout=T, policy=FAST, skills=SkillsOptions(inline_budget=100, home=tmp_path / "home")) as computer, \
            joined_agent("reader", smcp.url, "memory", timeout=T) as agent:
        computer.blobs = BlobHandles(max_memory=1000)  # room for one SKILL.md held in memory, not two
        first, second = (skill_md_handle(agent, "c", "mcp:remote:notes") for _ in range(2))
        assert agent.get_blob("c", second, timeout=T) == long_md.split("---\n", 2)[2].encode()
        with pytest.raises(BlobError) as caught:
            agent.get_blob("c", first, timeout=T)
        assert (caught.value.code, caught.value.details["reason"]) == (4018, "gone")


FOLDED_MD = """---
name: code-review   # the name an Agent sees is mcp:<server>:code-review
description: >-
  Reviews code:
  finds bugs
metadata:
  author: smcp-sync tests
  owners:
    team: tools
tags: [review, 2]
---
Review it.
"""


def test_front_matter_is_yaml_and_a_package_with_invalid_yaml_is_left_out_with_its_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entries = [
        *served_package("yaml", "review", {"SKILL.md": FOLDED_MD}),
        *served_package("yaml", "broken", {"SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\nBody.\n"}),
    ]
    server = skill_server(tmp_path, "yaml", entries)
    with serving() as smcp, \
            connected_computer("c", [server], smcp.url, "yaml", timeout=T, policy=FAST, skills=SkillsOptions(home=tmp_path / "home")) as computer, \
            joined_agent("reader", smcp.url, "yaml", timeout=T) as agent:
        [review] = agent.get_skills("c", timeout=T)
        body = agent.get_skill("c", "mcp:yaml:code-review", timeout=T).body
        listed = computer.skills()
    assert (review.name, review.description, review.tags) == ("mcp:yaml:code-review", "Reviews code: finds bugs", ["review", "2"])
    assert review.skill_metadata == {"author": "smcp-sync tests", "owners": {"team": "tools"}}
    assert body == "Review it.\n" and [s.name for s in listed] == ["mcp:yaml:code-review"]
    [reason] = [r.getMessage() for r in caplog.records if "skill://yaml/broken" in r.getMessage()]
    assert "front matter is not valid YAML" in reason and "line 4" in reason  # the closing ---
    assert str(tmp_path) not in reason


# -- archive downloads: one deadline each, on a warm-up lane of their own, ended by close()


class Drip:
    """An HTTP server whose one archive never finishes: it announces 10 MB and sends a
    byte every 50 ms until the client goes away (`ended`)."""

    def __init__(self) -> None:
        self.connected = threading.Event()
        self.ended = threading.Event()
        self._stop = threading.Event()
        drip = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                self.send_response(200)
                self.send_header("Content-Length", str(10_000_000))
                self.end_headers()
                drip.connected.set()
                try:
                    for _ in range(2000):  # bounded: 100 s
                        if drip._stop.wait(0.05):
                            return
                        self.wfile.write(b"\0")
                        self.wfile.flush()
                except OSError:
                    pass
                finally:
                    drip.ended.set()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/slow.tar.gz"
        self._thread = threading.Thread(target=self._server.serve_forever, name="drip-http")

    @contextlib.contextmanager
    def serving(self) -> Iterator[Drip]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)


def archive_server(tmp_path: Path, url: str) -> dict[str, Any]:
    meta = {"source": "archive", "archive_uri": url, "archive_format": "tar.gz"}
    return skill_server(tmp_path, "arch", [{"uri": "skill://arch/slow", "name": "slow", "_meta": meta}])


def test_an_archive_download_has_one_deadline_not_one_per_read(
    no_leaks: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = attrs.evolve(FAST, request_timeout=1.0, cold_wait=0.2)
    with Drip().serving() as drip, \
            Computer("c", [archive_server(tmp_path, drip.url)], policy=policy, confirm=allow_all, skills=SkillsOptions(home=tmp_path / "home")) as computer:
        assert drip.connected.wait(T)
        reasons = lambda: [r.getMessage() for r in caplog.records if "skill://arch/slow" in r.getMessage()]  # noqa: E731
        [reason] = wait_until(reasons, 15, "the download given up")  # a byte every 50 ms: no read ever times out
        assert "took longer than 1 s" in reason
        assert drip.ended.wait(T)
        assert computer.skills() == []


def test_a_stalled_download_holds_up_no_desktop_update_and_close_ends_it(no_leaks: None, tmp_path: Path) -> None:
    policy = attrs.evolve(FAST, request_timeout=25.0, cold_wait=0.2)
    desk = skill_server(tmp_path, "desk", [])
    window = {"uri": "window://desk.host/main", "name": "main", "text": "hello"}
    with Drip().serving() as drip:
        computer = Computer("c", [archive_server(tmp_path, drip.url), desk], policy=policy, confirm=allow_all, skills=SkillsOptions(home=tmp_path / "home")).start()
        try:
            assert drip.connected.wait(T)  # the warm-up is now downloading, for up to 25 s
            result = computer.call_tool("desk__set_resources", {"resources": [window]}, timeout=T)
            assert not result.is_error, result.text
            wait_until(lambda: any(w.startswith(window["uri"]) for w in computer.desktop()), 10, "the new window")
        finally:
            computer.close()
        alive = [t.name for t in threading.enumerate() if t.name.startswith("smcp-computer-")]
        assert alive == []
        assert drip.ended.wait(5)


# -- package bounds, checked while the entries stream by


def many_empty_entries(count: int) -> bytes:
    """A tar.gz of `count` empty files (one header each): a small download, a huge listing."""
    header = tarfile.TarInfo("empty.txt").tobuf(format=tarfile.USTAR_FORMAT)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb") as packed:
        for _ in range(count // 1000):
            packed.write(header * 1000)
        packed.write(b"\0" * 1024)
    return buffer.getvalue()


def test_an_archive_of_200k_entries_is_refused_while_its_headers_stream_by(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: every header was parsed first (92 MB and 18 s measured for 200k entries)."""
    bomb = many_empty_entries(200_000)
    with http_files({"bomb.tar.gz": bomb}) as base, \
            Computer("c", [skill_server(tmp_path, "arch", [])], policy=FAST, confirm=allow_all, skills=SkillsOptions(home=tmp_path / "home")) as computer:
        tracemalloc.start()
        try:
            meta = {"source": "archive", "archive_uri": f"{base}/bomb.tar.gz", "archive_format": "tar.gz"}
            result = computer.call_tool("arch__set_resources", {"resources": [
                {"uri": "skill://arch/bomb", "name": "bomb", "_meta": meta}]}, timeout=T)
            assert not result.is_error, result.text
            reasons = lambda: [r.getMessage() for r in caplog.records if "skill://arch/bomb" in r.getMessage()]  # noqa: E731
            [reason] = wait_until(reasons, 60, "the archive refused")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert computer.skills() == []
    assert peak < 40_000_000, f"{peak} bytes allocated at the peak"  # measured: 13.6 MB (before: 92 MB)
    assert "more than 10000 entries" in reason


def test_a_package_served_as_resources_has_the_archives_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(skill_archives, "MAX_PACKAGE_FILES", 3)
    monkeypatch.setattr(skill_archives, "MAX_PACKAGE_BYTES", 1000)
    entries = [
        *served_package("pkgs", "fits", {"SKILL.md": NOTES_MD, "a.md": "a", "b.md": "b"}),
        *served_package("pkgs", "many", {"SKILL.md": NOTES_MD.replace("notes", "many"), "a.md": "a", "b.md": "b",
                                         "c.md": "c"}),
        *served_package("pkgs", "heavy", {"SKILL.md": NOTES_MD.replace("notes", "heavy"), "a.md": "x" * 600,
                                          "b.md": "y" * 600}),
    ]
    home = tmp_path / "home"
    with Computer("c", [skill_server(tmp_path, "pkgs", entries)], policy=FAST, confirm=allow_all, skills=SkillsOptions(home=home)) as computer:
        assert [skill.name for skill in computer.skills()] == ["mcp:pkgs:notes"]
        staged = {p.parent.name for p in files_under(home)}
    assert staged == {"fits"}
    reasons = {uri: [r.getMessage() for r in caplog.records if uri in r.getMessage()]
               for uri in ("skill://pkgs/many", "skill://pkgs/heavy")}
    assert "more than 3 entries" in reasons["skill://pkgs/many"][0]
    assert "more than 1000 bytes" in reasons["skill://pkgs/heavy"][0]


def test_the_mounted_mode_is_refused_from_a_remote_server(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A remote server's mount_dir names a folder of its machine: read here, it would be
    whatever folder of this machine has that name."""
    mine = tmp_path / "private"
    mine.mkdir()
    (mine / "SKILL.md").write_text(NOTES_MD.replace("notes", "private"), encoding="utf-8")
    entries = [
        {"uri": "skill://remote/private", "name": "private", "_meta": {"source": "mounted", "mount_dir": str(mine)}},
        *served_package("remote", "shared", {"SKILL.md": NOTES_MD.replace("notes", "shared")}),
    ]
    state = tmp_path / "remote.json"
    write_state(state, entries)
    process, url = start_http_server(RESOURCE_SERVER, "--state", str(state), "--transport", "streamable")
    try:
        with Computer("c", [http_config("remote", "streamable", url)], policy=FAST, confirm=allow_all, skills=SkillsOptions(home=tmp_path / "home")) as computer:
            assert [skill.name for skill in computer.skills()] == ["mcp:remote:shared"]
    finally:
        stop(process)
    [reason] = [r.getMessage() for r in caplog.records if "skill://remote/private" in r.getMessage()]
    assert "stdio MCP servers only" in reason


def test_a_user_skill_with_invalid_yaml_is_left_out_with_its_reason_and_no_host_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    user = tmp_path / "my-skills"
    for name, md in (("good", NOTES_MD), ("broken", "---\nname: x\ndescription: [unclosed\n---\n")):
        (user / name).mkdir(parents=True)
        (user / name / "SKILL.md").write_text(md, encoding="utf-8")
    with Computer("c", [], confirm=allow_all, skills=SkillsOptions(home=tmp_path / "home", user_folder=user)) as computer:
        assert [skill.name for skill in computer.skills()] == ["good"]
    [reason] = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert "broken skipped: its SKILL.md front matter is not valid YAML" in reason
    assert str(tmp_path) not in reason
