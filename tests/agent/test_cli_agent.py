"""`smcp-sync agent ...` against a real Server with a scripted Computer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from smcp_sync.cli import main
from smcp_sync.server import SMCPServer

try:
    from tests.agent.scripted_computer import ScriptedComputer
except ImportError:  # tests/ itself is on sys.path
    from agent.scripted_computer import ScriptedComputer

OFFICE = "office-cli"


@pytest.fixture
def office(no_leaks):
    server = SMCPServer(auth="k-1")
    url = server.start()
    computer = ScriptedComputer("c1", auth={"api_key": "k-1"}).start(url, OFFICE)
    yield url, computer
    computer.close()
    server.stop()


def agent_cli(url: str, *args: str, api_key: str = "k-1") -> list[str]:
    return ["agent", "--url", url, "--office", OFFICE, "--api-key", api_key, "--timeout", "5", *args]


@pytest.mark.timeout(30)
def test_tools_room_and_desktop_as_text_and_json(office, capsys):
    url, _ = office
    assert main(agent_cli(url, "tools", "c1")) == 0
    assert capsys.readouterr().out.splitlines() == ["echo\tthe echo tool", "fail\tthe fail tool", "hang\tthe hang tool"]

    assert main(agent_cli(url, "--json", "tools", "c1")) == 0
    assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["echo", "fail", "hang"]

    assert main(agent_cli(url, "--json", "room")) == 0
    sessions = json.loads(capsys.readouterr().out)
    assert {(s["role"], s["name"]) for s in sessions} == {("agent", "smcp-sync-cli"), ("computer", "c1")}

    assert main(agent_cli(url, "desktop", "c1", "--size", "1")) == 0
    assert capsys.readouterr().out == "window://desk.test/main\n\nhello\n"


@pytest.mark.timeout(30)
def test_call_prints_the_result_and_exits_1_on_a_tool_error(office, capsys):
    url, computer = office
    assert main(agent_cli(url, "call", "c1", "echo", '{"text": "hi"}')) == 0
    assert json.loads(capsys.readouterr().out) == {"text": "hi"}

    assert main(agent_cli(url, "--json", "call", "c1", "fail")) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["isError"] is True and result["meta"]["error_code"] == 4003

    assert main(agent_cli(url, "call", "c1", "fail")) == 1
    assert capsys.readouterr().out.startswith("tool error [4003]: tool 'fail' raised")


@pytest.mark.timeout(30)
def test_usage_and_protocol_errors_have_exit_codes_and_clear_messages(office, capsys):
    url, _ = office
    assert main(agent_cli(url, "call", "c1", "echo", "{not json")) == 2
    assert "PARAMS is not valid JSON" in capsys.readouterr().err
    assert main(agent_cli(url, "call", "c1", "echo", "[1]")) == 2
    assert "PARAMS must be a JSON object" in capsys.readouterr().err

    assert main(agent_cli(url, "tools", "nobody")) == 1
    assert capsys.readouterr().err == "smcp-sync agent: [404] no computer named 'nobody' in this office\n"

    assert main(agent_cli(url, "room", api_key="wrong")) == 1
    assert capsys.readouterr().err == "smcp-sync agent: [401] authentication failed (give the Server's API key with --api-key KEY or $SMCP_API_KEY)\n"

    for bad, why in ((["--limit", "-1"], "must be >= 1, got -1"), (["--limit", "101"], "must be 1-100"), (["--offset", "-2"], "must be >= 0")):
        assert main(agent_cli(url, "finder", "c1", *bad)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"argument {bad[0]}: {why}" in err


@pytest.mark.timeout(60)
def test_the_installed_command_runs_with_the_key_from_the_environment(office):
    url, _ = office
    command = Path(sys.executable).with_name("smcp-sync")
    completed = subprocess.run(
        [str(command), "agent", "--url", url, "--office", OFFICE, "--json", "call", "c1", "echo", '{"n": 1}'],
        capture_output=True,
        text=True,
        timeout=50,
        env={"SMCP_API_KEY": "k-1", "PATH": str(command.parent)},
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["structuredContent"] == {"n": 1}
