"""Fixtures for the Computer's tests: Computers that are always closed, and HTTP test
MCP servers started once per module (children of the test run, not of the Computer)."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from smcp_sync.computer import Computer, allow_all

from .helpers import FAST, TOOL_SERVER, CallLogs, start_http_server, stop


@pytest.fixture
def computer_factory(no_leaks) -> Iterator[Callable[..., Computer]]:
    """`computer_factory(*servers, **options)` -> a started Computer, closed after the test
    (`confirm` unless given: `allow_all`; pass `confirm=None` for the Computer's default)."""
    made: list[Computer] = []

    def make(*servers: dict[str, Any], start: bool = True, **options: Any) -> Computer:
        options.setdefault("policy", FAST)
        options.setdefault("confirm", allow_all)
        computer = Computer(options.pop("name", "test-computer"), list(servers), **options)
        made.append(computer)
        return computer.start() if start else computer

    yield make
    for computer in made:
        computer.close()


@pytest.fixture(scope="module")
def call_logs(tmp_path_factory: pytest.TempPathFactory) -> CallLogs:
    return CallLogs(tmp_path_factory.mktemp("call-logs"))


@pytest.fixture(scope="module")
def http_servers(call_logs: CallLogs) -> Iterator[dict[str, str]]:
    """One tool_server per HTTP transport for the module: {"sse": url, "streamable": url}."""
    procs, urls = [], {}
    try:
        for transport in ("sse", "streamable"):
            proc, url = start_http_server(
                TOOL_SERVER, "--transport", transport, "--name", f"http-{transport}", env=call_logs.env
            )
            procs.append(proc)
            urls[transport] = url
        yield urls
    finally:
        for proc in procs:
            stop(proc)


@pytest.fixture(scope="module")
def protected(issuer: Any) -> Iterator[str]:
    """The URL of a protected streamable MCP server whose calls of `add` also need scope
    ``admin`` (tests/mcp_servers/oauth_server.py ``--step-up``), authorized by the
    requesting module's `issuer` fixture (its AuthorizationServer)."""
    from .mcp.test_oauth import OAUTH_SERVER

    proc, url = start_http_server(
        OAUTH_SERVER, "--transport", "streamable", "--issuer", issuer.url, "--step-up", "add=admin"
    )
    try:
        yield url
    finally:
        stop(proc)
