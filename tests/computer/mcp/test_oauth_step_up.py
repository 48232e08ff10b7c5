"""Scope step-up for the authorization code modes (docs/computer/mcp-client.md), with the
real parts of test_oauth.py: an MCP server whose `add` also needs scope ``admin``
(tests/mcp_servers/oauth_server.py ``--step-up``) answers such a call 403
``insufficient_scope``. With `ClientFeatures.open_url` the user is sent to authorize the
wider scope and the call is answered after it; without, or refused, the call is 4007 and
its hint names the scope and how to authorize it (`Computer.authorize(scopes=...)`).
`forget_authorization` drops the stored token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any, Iterator

import pytest

from smcp_sync.computer import ClientFeatures, Computer, FileTokenStore, MemoryTokenStore, ServerState, allow_all
from smcp_sync.protocol.errors import ErrorCode

from ..authorization_server import AuthorizationServer
from ..helpers import FAST, http_config
from .test_oauth import OAUTH, Browser, assert_authorization_needed

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        server.grantable = {"admin"}
        yield server


def host(url: str, features: ClientFeatures | None = None) -> Computer:
    config = http_config("locked", "streamable", url, oauth=OAUTH)
    return Computer(
        "c", [config], policy=FAST, confirm=allow_all, oauth_store=MemoryTokenStore(), client_features=features
    )


def scope_asked(authorization_url: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(authorization_url).query)["scope"][0]


def test_a_call_needing_a_wider_scope_sends_the_user_to_authorize_it_and_is_answered_after(
    issuer: AuthorizationServer, protected: str, no_leaks: None
) -> None:
    browser = Browser()
    with host(protected, ClientFeatures(open_url=browser)) as computer:
        computer.start()
        assert computer.authorize("locked", browser, timeout=30).running
        assert scope_asked(browser.opened[0]) == "tools"
        assert computer.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        assert computer.call_tool("locked__add", {"a": 2, "b": 3}, timeout=30).text == "5"
        assert len(browser.opened) == 2 and scope_asked(browser.opened[1]) == "tools admin"  # held and named together
        assert computer.call_tool("locked__add", {"a": 1, "b": 1}, timeout=20).text == "2"
        assert computer.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert len(browser.opened) == 2  # the wider token serves both tools
        assert computer.servers.statuses()[0].generation == 1  # no reconnection: the session carries the new token


def hinted_scope(result: Any) -> None:
    assert result.is_error and result.error_code == ErrorCode.TOOL_AUTHORIZATION_FAILED
    assert result.meta["auth_hint"] == {
        "action": "token_refresh_required",
        "message": "MCP server 'locked' asks for OAuth scope 'admin', which its authorization lacks: authorize it "
        "again with that scope on the Computer (Computer.authorize('locked', scopes=['admin']), or smcp-sync "
        "authorize locked --scope admin), then retry",
    }


def test_without_a_way_to_the_user_the_call_is_4007_saying_which_scope_and_authorize_with_it_grants_it(
    issuer: AuthorizationServer, protected: str, no_leaks: None
) -> None:
    browser = Browser()
    with host(protected) as computer:
        computer.start()
        assert computer.authorize("locked", browser, timeout=30).running
        hinted_scope(computer.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20))
        assert len(browser.opened) == 1
        # as the hint says: asked again although a token is stored, for that scope too
        assert computer.authorize("locked", browser, timeout=30, scopes=["admin"]).running
        assert len(browser.opened) == 2 and set(scope_asked(browser.opened[1]).split()) == {"tools", "admin"}
        assert computer.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20).text == "5"


def test_a_step_up_the_user_refuses_is_4007_and_the_token_held_still_serves(
    issuer: AuthorizationServer, protected: str, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    browser = Browser()
    with host(protected, ClientFeatures(open_url=browser)) as computer:
        computer.start()
        assert computer.authorize("locked", browser, timeout=30).running
        monkeypatch.setattr(issuer, "users_refuse", True)
        hinted_scope(computer.call_tool("locked__add", {"a": 2, "b": 3}, timeout=30))
        assert len(browser.opened) == 2  # asked, and refused
        assert computer.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"


def test_forget_authorization_drops_the_stored_token(issuer: AuthorizationServer, protected: str, no_leaks: None) -> None:
    with host(protected) as computer:
        computer.start()
        assert computer.authorize("locked", Browser(), timeout=30).running
        status = computer.forget_authorization("locked")
        assert status.state is ServerState.NEEDS_AUTHORIZATION
        assert_authorization_needed(computer.call_tool("locked__echo", {"text": "hi"}, timeout=20))
    with pytest.raises(ValueError, match="each one word"):
        computer.authorize("locked", Browser(), scopes=["tools admin"])


def test_smcp_sync_authorize_forget_drops_the_token_a_computer_would_use(
    issuer: AuthorizationServer, protected: str, tmp_path: Path, no_leaks: None
) -> None:
    """As a process: the keyring a test process has loaded is not the one the environment names."""
    store = FileTokenStore(tmp_path / "smcp_sync" / "oauth")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps([http_config("locked", "streamable", protected, oauth=OAUTH)]))
    with Computer("c", config=str(config), policy=FAST, confirm=allow_all, oauth_store=store) as computer:
        assert computer.authorize("locked", Browser(), timeout=30).running
    environment = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",  # no keyring: the file store
    }
    command = [sys.executable, "-c", "import sys; from smcp_sync.cli import main; sys.exit(main())"]
    forgotten = subprocess.run(
        [*command, "authorize", "locked", "--config", str(config), "--forget"],
        capture_output=True, text=True, env=environment, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert forgotten.returncode == 0, forgotten.stderr
    assert forgotten.stdout == "MCP server 'locked': its stored token is dropped\n"
    with Computer("c", config=str(config), policy=FAST, confirm=allow_all, oauth_store=store) as computer:
        assert computer.servers.statuses()[0].state is ServerState.NEEDS_AUTHORIZATION
