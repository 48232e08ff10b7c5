"""Credentials nowhere (docs/server/security-redaction.md): secrets planted in every kind
of config — a URL's user info and query, headers, env, inputs — of MCP servers that
answer 401 / 403 / 500, are in no log record (every one, at DEBUG, under the root
logger), no answer an Agent gets, no `Computer.diagnostics()` line and no stderr line
of `smcp-sync computer`; the messages still say what failed (host, status)."""

from __future__ import annotations

import contextlib
import json
import pathlib
import subprocess
import sys
from typing import Any, Iterator

import pytest
from office_parts import connected_computer, joined_agent, serving

from smcp_sync.protocol import to_wire
from smcp_sync.protocol.errors import ErrorCode
from smcp_sync.computer import Inputs

from .helpers import FAST, start_http_server, stdio_config, stop, wait_until

pytestmark = pytest.mark.timeout(90)

PROTECTED = str(pathlib.Path(__file__).parents[1] / "mcp_servers" / "protected_server.py")
TIME_BOX = 20.0
USERINFO, QUERY, HEADER, KEY_HEADER, INPUT, ENV = (
    "userinfo-5ecret-71", "query-5ecret-72", "header-5ecret-73", "apikey-5ecret-74", "input-5ecret-75", "env-5ecret-76"
)  # fmt: skip
SECRETS = (USERINFO, QUERY, HEADER, KEY_HEADER, INPUT, ENV)


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}: {text[:2000]}"


#: Protected MCP servers: streamable ones refusing tools/call with 401, 403 and 500, and
#: an SSE one refusing everything with 401.
PROTECTED_SERVERS = {
    "locked": ("--transport", "streamable", "--status", "401"),
    "forbidden": ("--transport", "streamable", "--status", "403"),
    "broken": ("--transport", "streamable", "--status", "500"),
    "sse-locked": ("--transport", "sse", "--status", "401", "--refuse-all"),
}


@contextlib.contextmanager
def protected(*names: str) -> Iterator[dict[str, str]]:
    """The `PROTECTED_SERVERS` named, running: their base URLs by name."""
    started: dict[str, tuple[Any, str]] = {}
    try:
        for name in names:
            started[name] = start_http_server(PROTECTED, *PROTECTED_SERVERS[name], stderr=subprocess.DEVNULL)
        yield {name: url for name, (_, url) in started.items()}
    finally:
        for proc, _ in started.values():
            stop(proc)


def with_secrets(url: str) -> str:
    """`url` with credentials in its user info and query."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://alice:{USERINFO}@{rest}?api_key={QUERY}&team=blue"


def configs(urls: dict[str, str]) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {HEADER}", "X-Api-Key": KEY_HEADER, "X-Input": "${input:token}"}
    remote = [
        {"name": name, "type": "sse" if name.startswith("sse") else "streamable",
         "server_parameters": {"url": with_secrets(url), "headers": headers}}
        for name, url in urls.items()
    ]  # fmt: skip
    return [*remote, stdio_config("local", env={"SERVICE_TOKEN": ENV})]


INPUTS = [{"type": "promptString", "id": "token", "description": "a token", "password": True}]


def test_no_secret_in_logs_answers_or_diagnostics(no_leaks: None, every_log_record: list[str]) -> None:
    with protected(*PROTECTED_SERVERS) as urls, serving() as server, connected_computer(
        "c1",
        configs(urls),
        server.url,
        "o1",
        timeout=TIME_BOX,
        policy=FAST,
        inputs=Inputs(definitions=INPUTS, values={"token": INPUT}),
    ) as computer, joined_agent("a1", server.url, "o1", timeout=TIME_BOX) as agent:  # fmt: skip
        answers = {
            name: agent.call_tool("c1", f"{name}__echo", {"text": "hi"}, timeout=TIME_BOX)
            for name in ("locked", "forbidden", "broken")
        }
        config = agent.get_config("c1")
        sse_status = wait_until(
            lambda: next((s for s in computer.servers.statuses() if s.bundle_id == "sse-locked" and s.error), None),
            timeout=TIME_BOX,
            what="the SSE server's failure",
        )
        diagnostics = computer.diagnostics()
    assert [answers[name].error_code for name in ("locked", "forbidden", "broken")] == [
        ErrorCode.TOOL_AUTHORIZATION_REQUIRED, ErrorCode.TOOL_AUTHORIZATION_FAILED, ErrorCode.TOOL_EXECUTION_FAILED
    ]  # fmt: skip
    for name, says in (("locked", "HTTP 401"), ("forbidden", "HTTP 403"), ("broken", "failed on MCP server 'broken'")):
        text = json.dumps(to_wire(answers[name]))
        assert_no_secret(f"the answer from {name}", text)
        assert says in text, text  # still says what failed (the mcp SDK words a 500 without its status)
    assert_no_secret("get_config", json.dumps(to_wire(config)))
    assert "401" in sse_status.error and "127.0.0.1" in sse_status.error, sse_status.error
    assert_no_secret("the SSE server's status", sse_status.error)
    assert_no_secret("diagnostics", "\n".join(diagnostics))
    assert every_log_record, "no log record captured"
    for record in every_log_record:
        assert_no_secret("a log record", record)


CLI = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]


def test_no_secret_on_the_stderr_of_smcp_sync_computer(no_leaks: None, tmp_path: pathlib.Path) -> None:
    """The CLI logs at DEBUG; the SSE server's refusal is reported, without its secrets."""
    config = tmp_path / "mcp.json"
    with protected("sse-locked") as urls, serving() as server:
        config.write_text(json.dumps({"servers": configs(urls), "inputs": INPUTS}))
        proc = subprocess.Popen(
            [*CLI, "--log-level", "DEBUG", "computer", "--config", str(config), "--url", server.url, "--office", "o1",
             "--name", "c1", "--input", f"token={INPUT}", "--allow-all-tools"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            seen = []
            assert proc.stderr is not None
            for line in proc.stderr:  # until the refusal is reported (it is retried: the stream goes on)
                seen.append(line)
                if "sse-locked" in line and "401" in line:
                    break
        finally:
            proc.terminate()
            _, rest = proc.communicate(timeout=30)
    stderr = "".join(seen) + rest
    assert any("401" in line and "127.0.0.1" in line for line in seen), stderr
    assert_no_secret("smcp-sync computer's stderr", stderr)
