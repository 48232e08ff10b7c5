"""Notes on the terminal during long waits (`cli.waiting`): on a terminal only, not
with --json, not for short waits; the note thread is gone when the block ends."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smcp_sync.cli import waiting as waiting_module
from smcp_sync.cli.waiting import terminal, waiting
from smcp_sync.server import SMCPServer

try:
    from tests.agent.scripted_computer import ScriptedComputer
except ImportError:  # tests/ itself is on sys.path
    from agent.scripted_computer import ScriptedComputer

pytestmark = pytest.mark.timeout(60)

SMCP_SYNC = str(Path(sys.executable).with_name("smcp-sync"))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_notes_go_to_a_terminal_only_and_not_when_quiet() -> None:
    assert terminal(io.StringIO(), quiet=False) is None
    assert terminal(Terminal(), quiet=True) is None
    screen = Terminal()
    assert terminal(screen, quiet=False) is screen


def test_a_long_wait_says_what_it_waits_for_and_how_long_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting_module, "NOTE_AFTER", 0.0)
    screen = Terminal()
    with waiting("starting things", screen):
        deadline = time.monotonic() + 10
        while "..." not in screen.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    text = screen.getvalue()
    assert text.startswith("starting things... ") and text.endswith(" s\n") and text.count("\n") == 1
    assert not [t for t in threading.enumerate() if t.name == "smcp-cli-waiting"]


def test_a_short_wait_and_no_terminal_say_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting_module, "NOTE_AFTER", 60.0)
    screen = Terminal()
    with waiting("quick", screen):
        pass
    with waiting("unseen", None):
        pass
    assert screen.getvalue() == ""


def _stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    controller, device = pty.openpty()
    try:
        proc = subprocess.Popen([SMCP_SYNC, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=device)
    finally:
        os.close(device)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the child closed the terminal's last writer
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(controller)
        code = proc.wait(30)
        proc.stdout.close()
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def test_the_agent_command_notes_a_long_wait_on_a_terminal_but_not_with_json(no_leaks) -> None:
    server = SMCPServer(auth="k")
    url = server.start()
    computer = ScriptedComputer("c1", auth={"api_key": "k"}).start(url, "o")
    try:
        common = ["agent", "--url", url, "--office", "o", "--api-key", "k", "--timeout", "1.5"]
        code, shown = _stderr_on_a_terminal(*common, "call", "c1", "hang")  # waits out its 1.5 s timeout
        assert code == 1
        note, error = shown.splitlines()
        assert note.startswith(f"call: waiting for {url}... ") and note.endswith(" s")
        assert error.startswith("smcp-sync agent: ") and "timed out" in error
        code, shown = _stderr_on_a_terminal(*common, "--json", "call", "c1", "hang")
        assert code == 1 and len(shown.splitlines()) == 1 and "waiting" not in shown
    finally:
        computer.close()
        server.stop()
