"""`vrl` scripts on real tool results, Agent -> Server -> Computer -> a real MCP server: the
transformed event in `meta.a2c_vrl_transformed` (a2c-smcp 0.4.2's key and event), the
result itself untouched; scripts refused when the config is loaded (syntax, compile, the
extra not installed, shown by a child interpreter that cannot import it); a runtime
failure leaves the result as it was, with one warning."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync import Agent, Computer
from smcp_sync.computer.config.vrl import VRL_TRANSFORMED, VrlError

from ..helpers import FAST, stdio_config

pytestmark = pytest.mark.timeout(60)

OFFICE = "vrl"
TIMEOUT = 20
#: Renames structuredContent.result to text and adds its length (a computed field).
RENAME_AND_COUNT = """
.structuredContent.text = del(.structuredContent.result)
.structuredContent.length = strlen(string!(.structuredContent.text))
"""
#: Fails at run time unless the echoed text is an integer.
AS_NUMBER = ".structuredContent.number = to_int!(.parameters.text)"


@pytest.fixture(scope="module")
def office() -> Iterator[tuple[Computer, Agent]]:
    servers = [stdio_config("Weather", vrl=RENAME_AND_COUNT), stdio_config("plain")]
    with serving() as server:
        with connected_computer("c1", servers, server.url, OFFICE, timeout=TIMEOUT, policy=FAST) as computer:
            with joined_agent("a1", server.url, OFFICE, timeout=TIMEOUT) as agent:
                yield computer, agent


def test_the_script_transforms_each_result_of_its_server_into_the_meta(office: tuple[Computer, Agent]) -> None:
    _, agent = office
    result = agent.call_tool("c1", "Weather__echo", {"text": "héllo"}, timeout=TIMEOUT)
    assert result.structured_content == {"result": "héllo"} and result.text == "héllo"  # untouched
    assert json.loads(result.meta[VRL_TRANSFORMED]) == {
        "meta": None,
        "content": [{"type": "text", "text": "héllo", "annotations": None, "meta": None}],
        "structuredContent": {"text": "héllo", "length": 5},
        "isError": False,
        "tool_name": "echo",
        "parameters": {"text": "héllo"},
    }


def test_other_servers_and_failures_the_computer_detects_are_not_transformed(office: tuple[Computer, Agent]) -> None:
    _, agent = office
    assert VRL_TRANSFORMED not in (agent.call_tool("c1", "plain__echo", {"text": "x"}, timeout=TIMEOUT).meta or {})
    unknown = agent.call_tool("c1", "Weather__nothing", {}, timeout=TIMEOUT)
    assert unknown.error_code == 4001 and VRL_TRANSFORMED not in unknown.meta


def test_get_config_shows_the_script_as_written(office: tuple[Computer, Agent]) -> None:
    _, agent = office
    assert agent.get_config("c1", timeout=TIMEOUT).servers["Weather"].vrl == RENAME_AND_COUNT


def test_a_runtime_failure_leaves_the_result_as_it_was_and_warns_once(
    computer_factory, caplog: pytest.LogCaptureFixture
) -> None:
    computer = computer_factory(stdio_config("numbers", vrl=AS_NUMBER))
    transformed = computer.call_tool("numbers__echo", {"text": "42"}, timeout=TIMEOUT)
    assert json.loads(transformed.meta[VRL_TRANSFORMED])["structuredContent"]["number"] == 42
    with caplog.at_level(logging.WARNING, logger="smcp_sync.computer.config.vrl"):
        failed = computer.call_tool("numbers__echo", {"text": "forty-two"}, timeout=TIMEOUT)
    assert (failed.text, failed.structured_content, failed.meta) == ("forty-two", {"result": "forty-two"}, None)
    warnings = [r.getMessage() for r in caplog.records if r.name == "smcp_sync.computer.config.vrl"]
    assert len(warnings) == 1 and "'numbers'" in warnings[0] and "to_int" in warnings[0]


@pytest.mark.parametrize(
    "script, error",
    [(".a = ", "E204"), (".b = .a + 1", "E103")],  # a syntax error; an unhandled fallible expression
    ids=["syntax", "compile"],
)
def test_a_script_that_does_not_compile_is_refused_when_the_config_is_loaded(script: str, error: str) -> None:
    with pytest.raises(VrlError) as refused:
        Computer("c", [stdio_config("broken", vrl=script)])
    assert refused.value.code == 400 and refused.value.details["field"] == "vrl"
    message = refused.value.message
    assert message.startswith("MCP server 'broken': its vrl script does not compile") and error in message


def _cli(tmp_path: Path, servers: list[dict], prelude: str = "") -> subprocess.CompletedProcess[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": servers}))
    code = f"import sys\n{prelude}\nfrom smcp_sync.cli import main\nsys.exit(main())"
    argv = [sys.executable, "-c", code, "computer", "--config", str(config), "--url", "http://127.0.0.1:9",
            "--office", "o", "--name", "c"]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_the_cli_exits_2_naming_the_server_and_the_vrl_error(tmp_path: Path) -> None:
    done = _cli(tmp_path, [stdio_config("broken", vrl=".a = ")])
    assert done.returncode == 2, done.stderr
    assert "MCP server 'broken': its vrl script does not compile" in done.stderr
    assert "error[E204]: syntax error" in done.stderr and "Traceback" not in done.stderr


#: Makes `vrl_python` impossible to import in the child, as when the extra is not installed.
_WITHOUT_VRL = """
class _NoVrl:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "vrl_python":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoVrl())
"""


def test_without_the_extra_a_config_with_vrl_is_refused_naming_the_extra(tmp_path: Path) -> None:
    done = _cli(tmp_path, [stdio_config("weather", vrl=RENAME_AND_COUNT)], prelude=_WITHOUT_VRL)
    assert done.returncode == 2, done.stderr
    assert "MCP server 'weather' has a vrl script, which needs the VRL runtime: " in done.stderr
    assert "pip install 'smcp_sync[vrl]'" in done.stderr
    config = json.dumps(stdio_config("weather"))
    loads = f"import sys, json\n{_WITHOUT_VRL}\nfrom smcp_sync import Computer\nComputer('c', [json.loads({config!r})])"
    done = subprocess.run([sys.executable, "-c", loads], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr  # a config without vrl does not need the extra
