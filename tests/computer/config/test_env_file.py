"""`envFile`: a stdio MCP server's environment from a file of ``KEY=VALUE`` lines, read at
spawn (a2c-smcp 0.4.2's parsing rules), the explicit `env` winning; a missing file is a
config error; `get_config` shows the path, never the file's contents. The environment a
real child got is seen through the test tool server's `sleep` tool, which writes a line to
the file named by its ``SMCP_TEST_STARTED_LOG`` variable."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from smcp_sync import Computer
from smcp_sync.computer.config.env_file import EnvFileError, parse_env_lines

from ..helpers import stdio_config

pytestmark = pytest.mark.timeout(60)


def test_lines_are_read_as_a2c_smcp_reads_them(caplog: pytest.LogCaptureFixture) -> None:
    text = "\n".join([
        "# a comment", "", "PLAIN=value", "export EXPORTED=1", 'DOUBLE="quoted value"', "SINGLE='x'",
        "MIXED=\"not stripped'", "SPACED = padded  ", "EMPTY=", "URL=http://h/?a=b", "no equals sign", "=nokey",
    ])  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="smcp_sync.computer.config.env_file"):
        variables = parse_env_lines(text, ".env")
    assert variables == {
        "PLAIN": "value", "EXPORTED": "1", "DOUBLE": "quoted value", "SINGLE": "x", "MIXED": "\"not stripped'",
        "SPACED": "padded", "EMPTY": "", "URL": "http://h/?a=b",
    }  # fmt: skip
    assert [r.getMessage() for r in caplog.records] == ["envFile .env line 11 has no '=': skipped"]


def _started_log(computer: Computer, tool: str, tmp_path: Path) -> dict[str, bool]:
    """Call `tool` (sleep 0): which of the two logs did the child write to?"""
    result = computer.call_tool(tool, {"seconds": 0}, timeout=20)
    assert not result.is_error, result.text
    return {name: (tmp_path / name).exists() for name in ("from-file.log", "from-env.log")}


def test_the_file_fills_the_environment_and_the_explicit_env_wins(computer_factory, tmp_path: Path) -> None:
    env_file = tmp_path / "server.env"
    env_file.write_text(f"SMCP_TEST_STARTED_LOG={tmp_path / 'from-file.log'}\n")
    only_file = stdio_config("only-file", envFile=str(env_file))
    both = stdio_config("both", env={"SMCP_TEST_STARTED_LOG": str(tmp_path / "from-env.log")}, env_file=str(env_file))
    computer = computer_factory(only_file)
    assert _started_log(computer, "only-file__sleep", tmp_path) == {"from-file.log": True, "from-env.log": False}
    (tmp_path / "from-file.log").unlink()
    computer.servers.add(both)
    assert _started_log(computer, "both__sleep", tmp_path) == {"from-file.log": False, "from-env.log": True}


def test_get_config_shows_the_path_never_the_contents(computer_factory, tmp_path: Path) -> None:
    env_file = tmp_path / "secret.env"
    env_file.write_text("API_TOKEN=s3cr3t-value\n")
    computer = computer_factory(stdio_config("s", env_file=str(env_file)))
    shown = computer.get_config().servers["s"]
    assert shown.env_file == str(env_file)
    assert "s3cr3t" not in repr(computer.get_config())


def test_a_missing_file_is_a_config_error_naming_the_server_and_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.env"
    with pytest.raises(EnvFileError) as refused:
        Computer("c", [stdio_config("tools", envFile=str(missing))])
    assert refused.value.code == 400 and refused.value.details == {"field": "envFile", "mcp_server": "tools"}
    assert refused.value.message == f"MCP server 'tools': cannot read its envFile {str(missing)!r}: No such file or directory"
    Computer("c", [stdio_config("tools", envFile=str(missing), disabled=True)])  # never spawned: not read


def test_a_file_removed_after_loading_fails_that_start_saying_why(computer_factory, tmp_path: Path) -> None:
    env_file = tmp_path / "server.env"
    env_file.write_text("A=1\n")
    computer = computer_factory(stdio_config("tools", envFile=str(env_file)), start=False)
    env_file.unlink()
    computer.start(timeout=20)
    status = computer.servers.statuses()[0]
    assert status.state.value != "running" and "cannot read its envFile" in (status.error or "")
