"""The `smcp-sync` command line as a whole: --help everywhere, the same options under the
same names, and every failure one line on stderr with its documented exit code
(0 ok, 1 runtime failure, 2 usage or configuration, 130 interrupted; see
tests/cli/test_demo.py for the interrupted and --serve cases).

Runs `smcp_sync.cli.main` in this process (it returns the exit code, also for usage
errors) against a real Server; the installed `smcp-sync` entry point where the process
boundary matters.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.cli import main

pytestmark = pytest.mark.timeout(30)

SMCP_SYNC = str(Path(sys.executable).with_name("smcp-sync"))
OFFICE = "cli-office"
KEY = "cli-key"


@pytest.fixture
def server(no_leaks: None) -> Iterator[str]:
    with SMCPServer(auth=KEY) as server:
        yield server.start()


@pytest.fixture
def closed_url() -> str:
    """The URL of a local port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def empty_config(tmp_path: Path) -> str:
    path = tmp_path / "empty.json"
    path.write_text("[]")
    return str(path)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The single line the command wrote on stderr."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err
    return err[:-1]


# -- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        [], ["demo"], ["server"], ["computer"], ["agent"],
        *(["agent", action] for action in ("tools", "call", "desktop", "finder", "read", "room")),
    ],
    ids=lambda command: " ".join(command) or "smcp-sync",
)
def test_help_everywhere(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: {' '.join(['smcp-sync', *command])} ")


@pytest.mark.parametrize("command", [[SMCP_SYNC], [sys.executable, "-m", "smcp_sync"]], ids=["script", "python -m"])
def test_the_installed_command_has_help_and_a_version(command: list[str]) -> None:
    for args, expected in ((["--help"], "usage: smcp-sync "), (["--version"], "smcp-sync ")):
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=20)
        assert done.returncode == 0 and done.stdout.startswith(expected) and done.stderr == ""
    refused = subprocess.run([*command, "no-such-command"], capture_output=True, text=True, timeout=20)
    assert refused.returncode == 2 and "no-such-command" in refused.stderr  # main()'s exit status is the process's


def test_the_command_line_loads_the_mcp_sdk_only_for_the_commands_that_use_it() -> None:
    """`smcp-sync agent ...` in a script starts in a fraction of a second: building the
    parser and running the Agent or the Server import no MCP module (about 1 s to load)."""
    probe = (
        "import sys; from smcp_sync.cli import build_parser; import smcp_sync.agent, smcp_sync.server; "
        "build_parser(); print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=20)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "[]", "")


@pytest.mark.parametrize(
    "command, flags",
    [
        ("agent", ["--url", "--office", "--name", "--api-key", "--timeout", "--json", "--log-level"]),
        ("computer", ["--url", "--office", "--name", "--api-key", "--timeout", "--json", "--log-level"]),
        ("server", ["--host", "--port", "--api-key", "--json", "--log-level"]),
        ("demo", ["--office", "--port", "--timeout", "--json", "--log-level", "--documents", "--serve"]),
    ],
)
def test_shared_options_have_the_same_names(command: str, flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    shown = capsys.readouterr().out
    assert all(f"  {flag}" in shown for flag in flags), shown
    if "--api-key" in flags:
        assert "$SMCP_API_KEY" in shown


# -- bad arguments: exit 2, naming the argument -----------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["agent", "--url", "ftp://host", "--office", "o", "room"],
            "smcp-sync agent: argument --url: expected http://HOST:PORT (or https, ws, wss), got 'ftp://host'",
        ),
        (
            ["agent", "--url", "http://host:99999", "--office", "o", "room"],
            "smcp-sync agent: argument --url: 'http://host:99999' is not a URL: Port out of range 0-65535",
        ),
        (
            ["agent", "--url", "http://h", "--office", "o", "--timeout", "-1", "room"],
            "smcp-sync agent: argument --timeout: must be > 0, got '-1'",
        ),
        (["agent", "--url", "http://h", "room"], "smcp-sync agent: the following arguments are required: --office"),
        (
            ["computer", "--config", "c.json", "--url", "localhost:8000", "--office", "o", "--name", "c"],
            "smcp-sync computer: argument --url: expected http://HOST:PORT (or https, ws, wss), got 'localhost:8000'",
        ),
        (["server", "--threads", "many"], "smcp-sync server: argument --threads: expected a whole number, got 'many'"),
        (["server", "--request-timeout", "0"], "smcp-sync server: argument --request-timeout: must be > 0, got '0'"),
        (
            ["demo", "--log-level", "loud"],
            "smcp-sync demo: argument --log-level: invalid choice: 'LOUD' (choose from ",  # quoting varies by Python
        ),
        (["serve"], "smcp-sync: argument COMMAND: invalid choice: 'serve' (choose from "),
    ],
)
def test_bad_arguments_exit_2_with_one_line_naming_the_argument(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    line = one_line(capsys)
    assert line.startswith(message), line
    assert line.endswith(" --help)")


def test_bad_params_of_a_tool_call_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--url", "http://h", "--office", "o", "call", "c", "tool", "[1, 2]"]) == 2
    assert one_line(capsys) == "smcp-sync agent: PARAMS must be a JSON object, e.g. '{\"text\": \"hi\"}'"


# -- bad configuration files: exit 2, naming the file, the server or input, the field -----------


@pytest.mark.parametrize(
    "content, message",
    [
        (
            [{"name": "files", "type": "stdio", "server_parameters": {"command": 7}}],
            "{file}: MCP server 'files': invalid StdioServerConfig | SseServerConfig | StreamableHttpServerConfig: "
            "expected str, got int @ $.server_parameters.command",
        ),
        (
            {"servers": {"web": {"type": "sse", "server_parameters": {}}}},
            "{file}: MCP server 'web': invalid StdioServerConfig | SseServerConfig | StreamableHttpServerConfig: "
            "required field missing @ $.server_parameters.url",
        ),
        (
            [{"type": "stdio", "server_parameters": {"command": "python"}}],
            "{file}: MCP server #1: invalid StdioServerConfig | SseServerConfig | StreamableHttpServerConfig: "
            "required field missing @ $.name",
        ),
        (
            {"servers": [], "inputs": [{"id": "token", "type": "promptString"}]},
            "{file}: invalid PromptStringInput | PickStringInput | CommandInput: "
            "required field missing @ $.description",
        ),
        (
            {
                "servers": [{"name": "docs", "type": "stdio", "server_parameters": {"command": "${input:token}"}}],
                "inputs": [{"id": "token", "type": "promptString", "description": "Token"}],
            },
            "{file}: MCP server 'docs': input 'token' (Token) has no value",
        ),
        ("{not json", "configuration file '{file}' is not valid JSON: Expecting property name enclosed in double"),
        (None, "cannot read configuration file '{file}': No such file or directory"),
    ],
    ids=["field", "missing-field", "unnamed", "input", "input-value", "json", "missing-file"],
)
def test_bad_config_files_exit_2_naming_file_and_field(
    content: object, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_leaks: None
) -> None:
    config = tmp_path / "mcp.json"
    if isinstance(content, str):
        config.write_text(content)
    elif content is not None:
        config.write_text(json.dumps(content))
    computer = ["computer", "--config", str(config), "--url", "http://127.0.0.1:1", "--office", "o", "--name", "c"]

    assert main(computer) == 2
    assert one_line(capsys).startswith(f"smcp-sync computer: {message.format(file=config)}")


def test_a_bad_inputs_file_is_named(tmp_path: Path, empty_config: str, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps([{"id": "colour", "type": "pickString", "description": "Colour", "options": "red"}]))
    command = ["computer", "--config", empty_config, "--inputs", str(inputs), "--url", "http://h", "--office", "o"]

    assert main([*command, "--name", "c"]) == 2
    assert one_line(capsys).startswith(f"smcp-sync computer: {inputs}: invalid PromptStringInput | PickStringInput")


# -- unreachable server, refused connection and join: exit 1 ----------------------------------


def test_an_unreachable_server_exits_1(
    closed_url: str, empty_config: str, capsys: pytest.CaptureFixture[str], no_leaks: None
) -> None:
    assert main(["agent", "--url", closed_url, "--office", OFFICE, "--timeout", "5", "room"]) == 1
    assert one_line(capsys) == f"smcp-sync agent: cannot connect to {closed_url}: Connection error"

    computer = ["computer", "--config", empty_config, "--url", closed_url, "--office", OFFICE, "--name", "c"]
    assert main([*computer, "--timeout", "5"]) == 1
    assert one_line(capsys) == f"smcp-sync computer: cannot connect to {closed_url}: Connection error"


def test_a_refused_join_exits_1(server: str, empty_config: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Agent("first", auth={"api_key": KEY}) as first, Computer("laptop") as laptop:
        first.connect(server, timeout=10)
        first.join_office(OFFICE)
        laptop.connect(server, OFFICE, auth={"api_key": KEY})

        agent = ["agent", "--url", server, "--office", OFFICE, "--api-key", KEY, "--timeout", "5"]
        assert main([*agent, "room"]) == 1
        assert one_line(capsys).startswith("smcp-sync agent: [4101] ")

        computer = ["computer", "--config", empty_config, "--url", server, "--office", OFFICE, "--name", "laptop"]
        assert main([*computer, "--api-key", KEY, "--timeout", "5"]) == 1
        taken = f"[403] a computer named 'laptop' is already in office '{OFFICE}'"
        assert one_line(capsys) == f"smcp-sync computer: {taken}"


def test_a_refused_connection_exits_1(
    server: str, empty_config: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SMCP_API_KEY", "wrong")  # the default of --api-key
    assert main(["agent", "--url", server, "--office", OFFICE, "--timeout", "5", "room"]) == 1
    assert one_line(capsys) == "smcp-sync agent: [401] authentication failed (give the Server's API key with --api-key KEY or $SMCP_API_KEY)"


def test_a_missing_key_is_one_line_with_the_hint_and_no_log_line_before_it(server: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "SMCP_API_KEY"}
    done = subprocess.run(
        [SMCP_SYNC, "agent", "--url", server, "--office", OFFICE, "--timeout", "5", "room"],
        capture_output=True, text=True, timeout=25, env=environment,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["smcp-sync agent: [401] authentication failed (give the Server's API key with --api-key KEY or $SMCP_API_KEY)"]


# -- the rest of the contract -------------------------------------------------------------------


@pytest.mark.parametrize("where", ["before", "after"])
def test_log_level_works_before_or_after_the_command(where: str, closed_url: str) -> None:
    command = ["agent", "--url", closed_url, "--office", OFFICE, "room"]
    flag = ["--log-level", "debug"]
    verbose = [*flag, *command] if where == "before" else [*command[:-1], *flag, "room"]
    runs = [
        subprocess.run([SMCP_SYNC, *args], capture_output=True, text=True, timeout=25)
        for args in (command, verbose)
    ]
    assert [run.returncode for run in runs] == [1, 1]
    quiet, loud = (run.stderr.splitlines() for run in runs)
    assert quiet == [f"smcp-sync agent: cannot connect to {closed_url}: Connection error"]
    assert loud[-1] == quiet[0]
    assert any(" INFO smcp_sync.connection.session: agent 'smcp-sync-cli': cannot connect" in line for line in loud)
    assert all(" smcp_sync." in line for line in loud[:-1]), "other libraries' logs stay at WARNING"


def test_an_unexpected_failure_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from smcp_sync.cli import server as server_command

    def broken(args: object) -> int:
        raise RuntimeError("something no command expected")

    monkeypatch.setattr(server_command, "run", broken)
    assert main(["server"]) == 1
    assert one_line(capsys) == (
        "smcp-sync server: unexpected RuntimeError: something no command expected (--log-level DEBUG shows where)"
    )


def test_server_json_prints_the_bound_url_and_a_busy_port_is_one_line(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [SMCP_SYNC, "server", "--port", "0", "--json", "--api-key", KEY],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = json.loads(server.stdout.readline())["url"]
        port = url.rsplit(":", 1)[1]
        busy = subprocess.run([SMCP_SYNC, "server", "--port", port], capture_output=True, text=True, timeout=20)
    finally:
        server.terminate()
        server.communicate(timeout=20)
    assert url.startswith("http://127.0.0.1:")
    assert busy.returncode == 1
    assert busy.stderr == f"smcp-sync server: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert server.returncode == 0


def test_computer_json_prints_what_joined_and_sigterm_ends_it(server: str, tmp_path: Path) -> None:
    config = tmp_path / "tools.json"
    tools_server = {"command": sys.executable, "args": ["-m", "smcp_sync.demo.servers.tools_server"]}
    config.write_text(json.dumps([{"name": "tools", "type": "stdio", "server_parameters": tools_server}]))
    command = ["computer", "--config", str(config), "--url", server, "--office", OFFICE, "--name", "laptop"]
    computer = subprocess.Popen(
        [SMCP_SYNC, *command, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "SMCP_API_KEY": KEY},
    )  # fmt: skip
    try:
        assert computer.stdout is not None
        ready = json.loads(computer.stdout.readline())
    finally:
        computer.terminate()
        _, stderr = computer.communicate(timeout=20)
    assert ready == {
        "computer": "laptop",
        "office_id": OFFICE,
        "url": server,
        "tools": ["tools__calculate", "tools__text_stats", "tools__current_time", "tools__list_documents", "tools__read_document"],
        "servers": {"tools": "running"},
    }
    assert computer.returncode == 0, stderr


@pytest.mark.parametrize("allowed", [False, True])
def test_computer_runs_tools_without_auto_apply_only_with_allow_all_tools(
    server: str, tmp_path: Path, allowed: bool
) -> None:
    """Nobody is there to confirm a call: refused (4005) unless --allow-all-tools, and the
    refusal the Agent gets names the flag."""
    config = tmp_path / "tools.json"
    tools_server = {"command": sys.executable, "args": ["-m", "smcp_sync.demo.servers.tools_server"]}
    config.write_text(json.dumps([{"name": "tools", "type": "stdio", "server_parameters": tools_server}]))
    command = ["computer", "--config", str(config), "--url", server, "--office", OFFICE, "--name", "laptop", "--json"]
    computer = subprocess.Popen(
        [SMCP_SYNC, *command, *(["--allow-all-tools"] if allowed else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "SMCP_API_KEY": KEY},
    )  # fmt: skip
    try:
        assert computer.stdout is not None
        json.loads(computer.stdout.readline())  # joined
        with Agent("caller", auth={"api_key": KEY}) as agent:
            agent.connect(server, timeout=10)
            agent.join_office(OFFICE, timeout=10)
            result = agent.call_tool("laptop", "calculate", {"expression": "6 * 7"}, timeout=20)
    finally:
        computer.terminate()
        computer.communicate(timeout=20)
    if allowed:
        assert (result.is_error, result.text) == (False, "42")
    else:
        assert (result.is_error, result.error_code) == (True, 4005)
        assert result.text == (
            "tool 'tools__calculate' refused (4005): no one confirms tool calls on this Computer;"
            " start it with --allow-all-tools or set auto_apply: true for the tool in its --config"
        )
