"""Inputs from the environment, the keyring and earlier answers, and changed at runtime
(docs/computer/inputs.md): a2c-smcp
0.4.2's names and places, with real parts — a real keyring backend (keyrings.alt's file
backend), real MCP servers restarted by `set_input`, a real Server and Agent."""

from __future__ import annotations

import json
import logging
import os
import pty
import queue
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from smcp_sync import Agent
from smcp_sync.computer import Computer, InputError, InputMemory
from smcp_sync.computer.config.input_sources import default_values_file, env_var_name
from smcp_sync.computer.config.inputs import InputResolver
from smcp_sync.protocol import BadRequestError, CommandInput, PickStringInput, PromptStringInput, events
from smcp_sync.server import SMCPServer
from smcp_sync.computer import Inputs

from ..helpers import stdio_config

pytestmark = pytest.mark.timeout(60)

keyring = pytest.importorskip("keyring")
file_backend = pytest.importorskip("keyrings.alt.file")

TOKEN = PromptStringInput(id="api-token", description="API token", password=True)
USER = PromptStringInput(id="user.name", description="User name")
REGION = PickStringInput(id="region", description="Region", options=["eu", "us"])
STAMP = CommandInput(id="stamp", description="Stamp", command="echo stamped")


@pytest.fixture
def file_keyring(tmp_path: Path) -> Iterator[Any]:
    """The process's keyring switched to a file backend in `tmp_path`, then restored."""
    backend = file_backend.PlaintextKeyring()
    backend.file_path = str(tmp_path / "keyring.cfg")
    before = keyring.get_keyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(before)


def test_the_variable_name_follows_the_official_rule_and_clashing_ids_are_refused() -> None:
    assert env_var_name("figma-token") == "A2C_SMCP_figma_token"
    assert env_var_name("My.Key/é") == "A2C_SMCP_My_Key__"  # case kept, each character replaced
    assert env_var_name("a__b") == "A2C_SMCP_a__b"  # nothing folded or trimmed
    with pytest.raises(BadRequestError, match="A2C_SMCP_a_b") as clash:
        InputResolver([PromptStringInput(id="a-b", description=""), PromptStringInput(id="a_b", description="")])
    assert clash.value.details == {"inputs": ["a-b", "a_b"]}


def test_values_come_from_the_environment_after_the_hosts_and_before_the_resolver() -> None:
    environ = {"A2C_SMCP_api_token": "from-env", "A2C_SMCP_user_name": "env-user", "A2C_SMCP_region": "mars"}
    asked: list[str] = []
    inputs = InputResolver(
        [TOKEN, USER, REGION], values={"user.name": "given"}, ask=lambda item: asked.append(item.id), environ=environ
    )
    assert (inputs.value("api-token"), inputs.value("user.name")) == ("from-env", "given")
    with pytest.raises(InputError, match="must be one of"):  # checked like any value
        inputs.value("region")
    assert asked == []
    with pytest.raises(InputError, match="set A2C_SMCP_api_token"):  # the error says where to put it
        InputResolver([TOKEN], environ={}).value("api-token")


def test_answers_are_remembered_secrets_in_the_keyring_others_in_a_0600_file(tmp_path: Path, file_keyring: Any) -> None:
    memory = InputMemory(tmp_path / "state" / "a2c" / "input-values.json")
    answers = {"api-token": "s3cret", "user.name": "ann", "region": "us", "stamp": "typed"}
    first = InputResolver([TOKEN, USER, REGION, STAMP], ask=lambda item: answers[item.id], memory=memory, environ={})
    assert [first.value(i) for i in answers] == ["s3cret", "ann", "us", "typed"]

    assert keyring.get_password("a2c-computer", "api-token") == "s3cret"  # the official service name
    assert json.loads(memory.values_file.read_text()) == {"user.name": "ann", "region": "us"}  # no secret, no command
    assert stat.S_IMODE(memory.values_file.stat().st_mode) == 0o600

    def nobody(item: Any) -> None:
        raise AssertionError(f"asked for {item.id} again")

    again = InputResolver([TOKEN, USER, REGION], ask=nobody, memory=memory, environ={})
    assert [again.value(i) for i in ("api-token", "user.name", "region")] == ["s3cret", "ann", "us"]


def test_without_a_usable_keyring_a_secret_is_not_remembered_anywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import keyring.backends.fail

    caplog.set_level(logging.INFO, logger="smcp_sync")
    before = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        memory = InputMemory(tmp_path / "values.json")
        InputResolver([TOKEN, USER], ask=lambda item: "typed", memory=memory, environ={}).render(
            ["${input:api-token}", "${input:user.name}"]
        )
        assert memory.recall(TOKEN) is None
        assert "typed" not in json.dumps(json.loads(memory.values_file.read_text()).get("api-token"))
        assert json.loads(memory.values_file.read_text()) == {"user.name": "typed"}
        said = [r for r in caplog.records if "keyring" in r.getMessage()]
        assert [r.levelname for r in said] == ["INFO"]  # expected on such a machine: said once, no warning
    finally:
        keyring.set_keyring(before)


def test_the_default_file_is_the_official_one(tmp_path: Path) -> None:
    assert default_values_file({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "a2c" / "input-values.json"
    assert default_values_file({"XDG_STATE_HOME": "relative"}) == Path.home() / ".local/state/a2c/input-values.json"


@pytest.fixture
def office(no_leaks: None) -> Iterator[tuple[str, Agent, "queue.Queue[Any]"]]:
    server = SMCPServer()
    url = server.start()
    agent = Agent("a1")
    heard: queue.Queue[Any] = queue.Queue()
    agent.on(events.UPDATE_CONFIG_NOTIFICATION, heard.put)
    try:
        agent.connect(url, timeout=10)
        agent.join_office("office-1", timeout=10)
        yield url, agent, heard
    finally:
        agent.close()
        server.stop()


def test_set_input_restarts_the_servers_using_it_and_the_office_hears_update_config(
    office: tuple[str, Agent, "queue.Queue[Any]"], computer_factory: Callable[..., Computer]
) -> None:
    url, agent, heard = office
    prefix = PromptStringInput(id="prefix", description="tool name prefix")
    computer = computer_factory(
        stdio_config("tools", "--prefix", "${input:prefix}"),
        stdio_config("other", "--prefix", "o_"),
        name="c1",
        inputs=Inputs(definitions=[prefix], values={"prefix": "old_"}),
    )
    computer.connect(url, "office-1", timeout=30)
    assert "tools__old_echo" in {t.name for t in agent.get_tools("c1", timeout=10)}
    other = computer.servers.status("other")
    while not heard.empty():  # what connecting announced
        heard.get_nowait()

    assert computer.set_input("prefix", "new_", timeout=30) == ["tools"]

    notice = heard.get(timeout=10)
    assert notice.computer == "c1"
    names = {t.name for t in agent.get_tools("c1", timeout=10)}
    assert "tools__new_echo" in names and "tools__old_echo" not in names and "other__o_echo" in names
    assert computer.servers.status("other") == other  # untouched: same session, same status
    with pytest.raises(InputError, match="no input with id 'nope'"):
        computer.set_input("nope", "x")


def _cli_computer(config: Path, url: str, environ: dict[str, str], stdin: Any, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "computer",
            "--config", str(config), "--url", url, "--office", "o", "--name", "c", "--json", *extra]  # fmt: skip
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)


def _ready_tools(proc: subprocess.Popen[str]) -> list[str]:
    """The tools of the CLI's ready line (after a prompt's own text, if any), then stop it."""
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        return list(json.loads(line[line.index("{"):])["tools"])
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_the_cli_remembers_a_terminal_answer_for_the_next_run(tmp_path: Path, no_leaks: None) -> None:
    config = tmp_path / "mcp.json"
    prefix = {"type": "promptString", "id": "prefix", "description": "Prefix"}
    config.write_text(json.dumps({"servers": [stdio_config("tools", "--prefix", "${input:prefix}")], "inputs": [prefix]}))
    environ = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with SMCPServer() as server:
        url = server.start()
        terminal, child_side = pty.openpty()
        try:
            first = _cli_computer(config, url, environ, child_side)
            os.close(child_side)
            os.write(terminal, b"typed_\n")  # waits in the terminal until the prompt reads it
            assert "tools__typed_echo" in _ready_tools(first)
        finally:
            os.close(terminal)
        assert "tools__typed_echo" in _ready_tools(_cli_computer(config, url, environ, subprocess.DEVNULL))
        forgetful = _cli_computer(config, url, environ, subprocess.DEVNULL, "--forget-inputs")
        _, errors = forgetful.communicate(timeout=60)
        assert forgetful.returncode == 2 and "input 'prefix' (Prefix) has no value" in errors
    values = tmp_path / "state" / "a2c" / "input-values.json"
    assert json.loads(values.read_text()) == {"prefix": "typed_"} and stat.S_IMODE(values.stat().st_mode) == 0o600
