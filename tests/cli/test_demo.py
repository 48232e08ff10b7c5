"""`smcp-sync demo`: the whole walkthrough against real parts (a Server on a free port, a
Computer with the bundled example MCP servers as child processes, an Agent), in this
process and through the installed command; nothing may be left running afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from smcp_sync.cli import main
from smcp_sync.demo import SAMPLE_DOCUMENTS

pytestmark = [pytest.mark.timeout(90), pytest.mark.usefixtures("no_leaks")]

SMCP_SYNC = str(Path(sys.executable).with_name("smcp-sync"))
STEPS = ["office", "tools", "tool_call", "desktop", "finder", "document", "skills", "update"]
TOOLS = ["tools__calculate", "tools__text_stats", "tools__current_time", "tools__list_documents", "tools__read_document"]
SKILLS = ["mcp:tools:quarterly-average", "mcp:tools:document-digest"]
WAIT = 60.0


def test_the_walkthrough_shows_every_step_and_leaves_nothing_behind(capsys: pytest.CaptureFixture[str]) -> None:
    samples_before = sorted(path.name for path in SAMPLE_DOCUMENTS.iterdir())

    assert main(["demo"]) == 0

    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line.startswith("── ")]
    assert [heading.split(" ", 2)[1] for heading in headings] == [f"{n}/8" for n in range(1, 9)]
    assert "  computer  demo-computer\n  agent     demo-agent\n" in out
    assert "demo-computer offers 5 tools:" in out
    assert 'calculate {"expression": "(1260 + 1305 + 1615) / 3"}\n  → 1393.33333333\n' in out
    assert "  → tool error: Error executing tool calculate: division by zero" in out
    assert "window://com.example.desktop/monitor\n" in out  # its layout declared in annotations / _meta
    assert "?priority=" not in out
    assert "5 documents, most recently modified first:" in out
    assert "Design note: the synchronous bridge to async MCP sessions  (md, 5 pages)" in out
    for level in ("Level 1  dpe://com.example.docs/", "Level 2  dpe://com.example.docs/", "Level 3  dpe://"):
        assert level in out
    assert "2 skills (SKILL.md packages the MCP servers serve):" in out
    assert "SKILL.md of mcp:tools:quarterly-average  (" in out and "\n  # Quarterly average\n" in out
    assert "notify:update_finder from demo-computer after" in out
    assert "the Finder now lists 6 documents, including dpe://com.example.docs/demo-note-" in out
    assert out.rstrip().endswith("Every step answered.")
    # The note went into a temporary copy, which is gone; the package's samples are untouched.
    [served] = [line.split(" from ", 1)[1] for line in out.splitlines() if line.startswith("documents served from")]
    assert not Path(served).exists()
    assert sorted(path.name for path in SAMPLE_DOCUMENTS.iterdir()) == samples_before


def test_json_mode_prints_one_object_per_step_and_the_process_leaves_no_child(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [SMCP_SYNC, "demo", "--json", "--office", "json-office"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=tmp_path,
    )  # fmt: skip
    try:
        first = json.loads(demo.stdout.readline())
        mcp_servers = psutil.Process(demo.pid).children(recursive=True)  # up once "start" is printed
        modules = sorted(_module_names(mcp_servers))
        rest, stderr = demo.communicate(timeout=WAIT)
    finally:
        _stop(demo)
    assert demo.returncode == 0, stderr
    assert stderr == ""
    assert modules == ["documents_server", "tools_server", "window_server"]
    gone, alive = psutil.wait_procs(mcp_servers, timeout=5)
    assert alive == []

    records = [first, *(json.loads(line) for line in rest.splitlines())]
    steps = {record["step"]: record for record in records}
    assert [record["step"] for record in records] == ["start", *STEPS, "finish"]
    assert all(steps[key]["ok"] for key in STEPS)
    assert first["office_id"] == steps["office"]["office_id"] == "json-office"
    assert first["url"].startswith("http://127.0.0.1:")
    assert sorted(s["role"] for s in steps["office"]["sessions"]) == ["agent", "computer"]
    assert [tool["name"] for tool in steps["tools"]["tools"]] == TOOLS
    answered, refused = (call["result"] for call in steps["tool_call"]["calls"])
    assert answered["isError"] is False and answered["content"][0]["text"] == "1393.33333333"
    assert refused["isError"] is True
    assert len(steps["desktop"]["desktops"]) == 1
    assert steps["finder"]["total_count"] == 5
    assert all(doc["uri"].startswith("dpe://com.example.docs/") for doc in steps["finder"]["documents"])
    document = steps["document"]
    assert document["level1"]["page_count"] == len(document["level1"]["pages"])
    assert document["level2"]["markdown"].startswith("## ")
    assert document["level3"]["element_id"] in {e["element_id"] for e in document["level2"]["page"]["elements"]}
    assert [skill["name"] for skill in steps["skills"]["skills"]] == SKILLS
    assert steps["skills"]["skill"]["body"].startswith("# Quarterly average\n")
    assert steps["update"]["notification"] == {"computer": "demo-computer"}
    assert steps["update"]["total_count"] == 6
    assert steps["finish"] == {"step": "finish", "ok": True, "failed": []}


def test_documents_points_the_demo_at_another_folder_which_it_only_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "my docs"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nShip the demo.\n\n## Steps\n\n- build\n- test\n", encoding="utf-8")
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}

    assert main(["demo", "--json", "--documents", str(folder)]) == 0

    steps = {record["step"]: record for record in map(json.loads, capsys.readouterr().out.splitlines())}
    assert steps["start"]["documents"] == str(folder.resolve())
    assert [doc["title"] for doc in steps["finder"]["documents"]] == ["Plan"]
    assert steps["document"]["level1"]["title"] == "Plan"
    assert steps["update"] == {"step": "update", "title": "An update notification", "ok": True, "skipped": True}
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == before


@pytest.mark.parametrize("stop, exit_code, json_mode", [(signal.SIGTERM, 0, False), (signal.SIGINT, 130, True)])
def test_serve_keeps_server_and_computer_up_for_another_agent_until_stopped(
    stop: signal.Signals, exit_code: int, json_mode: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = subprocess.Popen(
        [SMCP_SYNC, "demo", "--serve", "--office", "o-7", *(["--json"] if json_mode else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        if json_mode:
            serving = _record(demo, "serving")
            url, office, computer = serving["url"], serving["office_id"], serving["computer"]
        else:  # the text names the URL, the office and a command to try
            lines = _lines_until(demo, lambda line: line.startswith("  smcp-sync agent"))
            url = lines[0].rsplit(" at ", 1)[1]
            assert lines[-2] == f"Serving at {url}, office 'o-7', until Ctrl-C. In another terminal:"
            assert lines[-1] == f"  smcp-sync agent --url {url} --office o-7 tools demo-computer"
            office, computer = "o-7", "demo-computer"
        mcp_servers = psutil.Process(demo.pid).children(recursive=True)
        # The demo's Agent has left: the office takes the one the demo printed a command for.
        assert main(["agent", "--url", url, "--office", office, "--json", "tools", computer]) == 0
        assert [tool["name"] for tool in json.loads(capsys.readouterr().out)] == TOOLS
        demo.send_signal(stop)
        _, stderr = demo.communicate(timeout=WAIT)
    finally:
        _stop(demo)
    assert demo.returncode == exit_code, stderr
    assert "Traceback" not in stderr
    gone, alive = psutil.wait_procs(mcp_servers, timeout=5)
    assert len(mcp_servers) == 3 and alive == []


def test_a_terminal_that_cannot_show_the_samples_gets_replacement_characters() -> None:
    done = subprocess.run(
        [SMCP_SYNC, "demo"], capture_output=True, timeout=WAIT, env={**os.environ, "PYTHONIOENCODING": "ascii"}
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")  # nothing else in it
    assert "?? 6/8 A document, Level 1 ? 3 ??" in out
    assert "  2026 ????????" in out  # the Chinese report's title


def test_a_reader_that_goes_away_stops_the_demo_quietly_and_completely() -> None:
    """`smcp-sync demo --json | head -1`: the next write fails with a broken pipe."""
    demo = subprocess.Popen(
        [SMCP_SYNC, "demo", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        assert demo.stdout is not None
        assert json.loads(demo.stdout.readline())["step"] == "start"
        mcp_servers = psutil.Process(demo.pid).children(recursive=True)
        demo.stdout.close()
        stderr = demo.stderr.read() if demo.stderr else b""
        demo.wait(WAIT)
    finally:
        _stop(demo)
    assert demo.returncode == 1
    assert stderr == b""
    gone, alive = psutil.wait_procs(mcp_servers, timeout=5)
    assert len(mcp_servers) == 3 and alive == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "args, message",
    [
        (["--documents", "/no/such/folder"], "argument --documents: '/no/such/folder' is not a folder"),
        (["--port", "70000"], "argument --port: must be 0-65535, got 70000"),
        (["--timeout", "0"], "argument --timeout: must be > 0, got '0'"),
        (["--timeout", "soon"], "argument --timeout: expected seconds (a number > 0), got 'soon'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", *args]) == 2
    assert capsys.readouterr().err == f"smcp-sync demo: {message} (see smcp-sync demo --help)\n"


@pytest.mark.timeout(30)
def test_an_unknown_argument_is_reported_by_the_top_level_parser(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--serve", "extra"]) == 2
    assert capsys.readouterr().err == "smcp-sync: unrecognized arguments: extra (see smcp-sync --help)\n"


@pytest.mark.timeout(30)
def test_a_busy_port_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["demo", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err == f"smcp-sync demo: cannot listen on 127.0.0.1:{port}: Address already in use\n"


# -- helpers ------------------------------------------------------------------------------


def _module_names(processes: list[psutil.Process]) -> Iterator[str]:
    for process in processes:
        command = process.cmdline()
        yield command[command.index("-m") + 1].rpartition(".")[2]


def _record(demo: subprocess.Popen[str], step: str) -> dict[str, Any]:
    """Read the demo's JSON lines up to the one of `step`."""
    [line] = _lines_until(demo, lambda text: json.loads(text)["step"] == step)[-1:]
    return json.loads(line)


def _lines_until(demo: subprocess.Popen[str], found: Any) -> list[str]:
    """The demo's stdout lines up to the first one `found` accepts (fails if it exits first)."""
    assert demo.stdout is not None
    lines: list[str] = []
    for line in demo.stdout:
        lines.append(line.rstrip("\n"))
        if found(lines[-1]):
            return lines
    raise AssertionError(f"the demo ended (exit {demo.wait(WAIT)}) before that; it printed {lines}")


def _stop(demo: subprocess.Popen[str]) -> None:
    """After a failed assertion: stop the demo (SIGTERM lets it close its MCP servers)."""
    if demo.poll() is None:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.communicate(timeout=WAIT)
