"""`smcp-sync computer` answers a form elicitation on its terminal (a real one: a pty),
and without a terminal tells its MCP servers it cannot: an Agent calls the real
client_features server's ``ask_form`` through a real Server."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from office_parts import joined_agent, serving

from smcp_sync import SMCPServer
from smcp_sync.cli.terminal_answers import answer_on_terminal, show_authorization_url
from smcp_sync.computer import ElicitationAnswer, FormElicitation, UrlElicitation

from .helpers import stdio_config
from .mcp.test_client_features import SERVER as FORM_SERVER

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 20.0


@pytest.fixture
def server(no_leaks: None) -> Iterator[SMCPServer]:
    with serving() as started:
        yield started


def run_computer(server: SMCPServer, tmp_path: Path, stdin: Any) -> subprocess.Popen[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": [stdio_config("asker", script=FORM_SERVER)]}))
    argv = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "computer",
            "--config", str(config), "--url", server.url, "--office", "o", "--name", "c", "--json",
            "--allow-all-tools", "--forget-inputs"]  # fmt: skip
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ask_form(server: SMCPServer) -> Any:
    with joined_agent("a", server.url, "o", timeout=TIMEOUT) as agent:
        return json.loads(agent.call_tool("c", "asker__ask_form", {"message": "Who are you?"}, timeout=TIMEOUT).text)


def test_on_a_terminal_each_field_is_asked_with_its_default_and_the_answers_go_back(
    server: SMCPServer, tmp_path: Path
) -> None:
    terminal, child_side = pty.openpty()
    proc = run_computer(server, tmp_path, child_side)
    os.close(child_side)
    try:
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())  # ready
        # Enter keeps name's default, 41 for age, y for the newsletter, Enter sends
        os.write(terminal, b"\n41\ny\n\n")  # waits in the terminal until the prompts read it
        assert ask_form(server) == {"action": "accept", "content": {"name": "Ada", "age": 41, "newsletter": True}}
        assert proc.stdout.readline() == "MCP server 'asker' asks: Who are you?\n"
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
        os.close(terminal)


def test_without_a_terminal_the_server_hears_the_client_cannot_elicit(server: SMCPServer, tmp_path: Path) -> None:
    proc = run_computer(server, tmp_path, subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())  # ready
        assert ask_form(server) == {"code": -32600, "error": "Elicitation not supported"}
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


SCHEMA = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"},
        "count": {"type": "integer"},
        "note": {"type": "string"},
    },
    "required": ["count"],
}


def answers(*lines: str) -> Any:
    """A terminal on which the user types `lines`, then Ctrl-D."""
    typed = iter(lines)

    def ask(prompt: str) -> str:
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    return ask


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (("3", "x", "", "2", "", ""), ElicitationAnswer.accept({"size": "L", "count": 2})),  # a bad number asked again
        (("", "7", "hello", "n"), ElicitationAnswer.decline()),
        (("", "7"), ElicitationAnswer.cancel()),  # Ctrl-D
        (("9", "0", "4"), ElicitationAnswer.cancel()),  # no valid choice in three tries
    ],
    ids=["accept", "decline", "ctrl-d", "no-valid-answer"],
)
def test_the_terminals_answers(typed: tuple[str, ...], expected: ElicitationAnswer, capsys: pytest.CaptureFixture[str]) -> None:
    assert answer_on_terminal(FormElicitation("s", "Order?", SCHEMA), answers(*typed)) == expected


def test_a_url_is_shown_and_the_user_says_whether_they_go(capsys: pytest.CaptureFixture[str]) -> None:
    request = UrlElicitation("s", "Sign in", "https://example.test/in", "e1")
    assert answer_on_terminal(request, answers("y")) == ElicitationAnswer.accept()
    assert capsys.readouterr().out == "MCP server 's': Sign in\n  https://example.test/in\n"
    assert answer_on_terminal(request, answers("")) == ElicitationAnswer.decline()


def test_a_step_ups_url_is_shown_for_the_user_to_open(capsys: pytest.CaptureFixture[str]) -> None:
    assert show_authorization_url("http://as.example/authorize?scope=admin") is None  # the listener gets the redirect
    assert capsys.readouterr().out == (
        "An MCP server asks for a wider authorization; open this URL in a web browser:\n"
        "http://as.example/authorize?scope=admin\n"
    )
