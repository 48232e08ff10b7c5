"""Authorization failures that say why (docs/computer/mcp-client.md), with test_oauth.py's
real parts: the `mcp` SDK's reason (issuer mismatch, resource mismatch, registration
refused) in `OAuthAuthorizationError`'s message and as its cause; a server waiting for an
authorization in its own state, told once and not restarted with warnings; the
in-memory token store; `smcp-sync computer` printing the `smcp-sync authorize` line once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from office_parts import serving

from smcp_sync.computer import (
    Computer,
    MemoryTokenStore,
    OAuthAuthorizationError,
    ServerState,
    allow_all,
)
from smcp_sync.protocol.errors import ErrorCode

from ..authorization_server import AuthorizationServer
from ..helpers import FAST, http_config, start_http_server, stop, wait_until
from .test_oauth import OAUTH, OAUTH_SERVER, Browser, assert_authorization_needed, protected_server

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[AuthorizationServer, str]]:
    with protected_server() as provided:
        yield provided


def host(url: str, transport: str = "streamable") -> Computer:
    config = http_config("locked", transport, url, oauth=OAUTH)
    return Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=MemoryTokenStore())


def refusal(computer: Computer) -> OAuthAuthorizationError:
    with pytest.raises(OAuthAuthorizationError) as refused:
        computer.authorize("locked", Browser(), timeout=30)
    assert refused.value.code == ErrorCode.TOOL_AUTHORIZATION_FAILED
    return refused.value


def test_an_issuer_mismatch_is_named_in_the_message_and_the_sdks_error_is_the_cause(
    provider: tuple[AuthorizationServer, str], monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    issuer, url = provider
    monkeypatch.setattr(issuer, "advertised_issuer", "https://elsewhere.example")
    with host(url) as computer:
        refused = refusal(computer)
    assert refused.message == (
        "authorization of MCP server 'locked' failed (OAuthFlowError: Authorization server metadata issuer mismatch: "
        f"https://elsewhere.example != {issuer.url})"
    )
    assert type(refused.__cause__).__name__ == "OAuthFlowError"
    assert "issuer mismatch" in str(refused.__cause__)


def test_a_resource_mismatch_is_named(provider: tuple[AuthorizationServer, str], no_leaks: None) -> None:
    issuer, _ = provider
    proc, url = start_http_server(
        OAUTH_SERVER, "--transport", "sse", "--issuer", issuer.url, "--resource", "https://mcp.example.test/sse"
    )
    try:
        with host(url, "sse") as computer:
            refused = refusal(computer)
    finally:
        stop(proc)
    assert refused.message == (
        "authorization of MCP server 'locked' failed (OAuthFlowError: Protected resource https://mcp.example.test/sse "
        f"does not match expected {url})"
    )


def test_a_refused_registration_is_named_with_the_authorization_servers_answer(
    provider: tuple[AuthorizationServer, str], monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    issuer, url = provider
    monkeypatch.setattr(issuer, "registration_refused", True)
    with host(url) as computer:
        refused = refusal(computer)
    assert refused.message.startswith(
        "authorization of MCP server 'locked' failed (OAuthRegistrationError: Registration failed: 400 "
    )
    assert "invalid_client_metadata" in refused.message and "registration is closed" in refused.message
    assert type(refused.__cause__).__name__ == "OAuthRegistrationError"


def test_a_server_waiting_for_authorization_has_its_own_state_is_told_once_and_retried_quietly(
    provider: tuple[AuthorizationServer, str], caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """FAST's backoff_max is 1 s: several attempts come and go, one warning says it all;
    the memory store keeps the tokens authorize() obtained for the session after it."""
    _, url = provider
    caplog.set_level(logging.DEBUG, logger="smcp_sync")
    with host(url) as computer:
        computer.start()
        [status] = computer.servers.statuses()
        assert status.state is ServerState.NEEDS_AUTHORIZATION and status.authorization_code == 4006
        wait_until(
            lambda: caplog.text.count("'locked' still refuses the connection") >= 2, timeout=20, what="quiet retries"
        )
        assert computer.servers.statuses()[0].state is ServerState.NEEDS_AUTHORIZATION
        assert_authorization_needed(computer.call_tool("locked__echo", {"text": "hi"}, timeout=20))
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "locked" in r.getMessage()]
        assert len(warned) == 1 and "needs an OAuth authorization" in warned[0]
        assert "smcp-sync authorize locked" in warned[0]
        assert "restarting" not in caplog.text and "retrying" not in caplog.text
        assert any("needs an OAuth authorization" in line for line in computer.diagnostics())
        assert computer.authorize("locked", Browser(), timeout=30).running
        assert computer.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"


def test_smcp_sync_computer_prints_the_authorize_line_once(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    _, url = provider
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([http_config("locked", "streamable", url, oauth=OAUTH)]))
    environment = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    with serving() as server:
        argv = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())", "computer",
                "--config", str(config), "--url", server.url, "--office", "o", "--name", "c", "--json",
                "--allow-failed-servers", "--forget-inputs"]  # fmt: skip
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
        try:
            assert proc.stdout is not None and proc.stderr is not None
            ready = json.loads(proc.stdout.readline())
            assert ready["servers"] == {"locked": "needs_authorization"}
            line = f"smcp-sync computer: MCP server 'locked' needs an OAuth authorization: smcp-sync authorize locked --config {config}\n"
            assert line in iter(proc.stderr.readline, "")  # read until it comes
        finally:
            proc.terminate()
            _, rest = proc.communicate(timeout=20)
    assert line not in rest
