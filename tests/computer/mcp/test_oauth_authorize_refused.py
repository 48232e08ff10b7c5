"""`smcp-sync authorize` refused (docs/computer/oauth.md, "From a terminal":
exit 1 if refused), as a process, with test_oauth.py's real parts: the user denies at the
authorization server, or it refuses the client's secret. Either way the command exits 1
with one line on stderr naming the server, and no secret, code or token anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..authorization_server import AuthorizationServer
from ..helpers import http_config
from .test_oauth import OAUTH, Authorize, Browser, protected_server
from .test_oauth_modes import SECRET_INPUT

pytestmark = pytest.mark.timeout(60)

@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[AuthorizationServer, str]]:
    with protected_server() as provided:
        yield provided


def _config(server: dict[str, Any]) -> dict[str, Any]:
    return {"servers": [server], "inputs": [SECRET_INPUT]}


def stored_tokens(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "config" / "smcp_sync" / "oauth"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_a_user_who_denies_it_makes_authorize_exit_1_naming_the_server(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    issuer, url = provider
    monkeypatch.setattr(issuer, "users_refuse", True)
    grants = dict(issuer.grants)
    command = Authorize(tmp_path, _config(http_config("locked", "streamable", url, oauth=OAUTH)))
    try:
        assert command.lines.get(timeout=30) == "To authorize MCP server 'locked', open this URL in a web browser:\n"
        browser = Browser()
        browser(command.lines.get(timeout=5).strip())  # the user says no: redirected with access_denied
    finally:
        code, out, err = command.finish()
    assert code == 1, err
    assert err.endswith("\nsmcp-sync authorize: authorization of MCP server 'locked' was not granted: access_denied\n")
    assert "Traceback" not in err and "ERROR" not in err  # the rest: WARNINGs of the server refused before
    assert out == ""  # no "is authorized" line
    assert issuer.grants == grants
    assert [set(json.loads(path.read_text())) - {"client", "server"} for path in stored_tokens(tmp_path)] == [set()]
    said = out + err
    assert [value for value in issuer.issued if value in said and not value.startswith("client-")] == []


def test_a_wrong_client_secret_makes_authorize_exit_1_naming_the_server_and_not_the_secret(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    issuer, url = provider
    client_id, secret = issuer.add_client("client_secret_basic")
    wrong = f"{secret}-but-wrong"
    mode = {"type": "clientCredentialsSecret", "clientId": client_id, "clientSecretInput": "oauth_secret", "issuer": issuer.url}
    server = http_config("locked", "streamable", url, oauth={"scopes": ["tools"], "mode": mode})
    grants = issuer.grants["client_credentials"]
    command = Authorize(tmp_path, _config(server), {"A2C_SMCP_oauth_secret": wrong})
    code, out, err = command.finish()
    assert code == 1, err
    assert err.endswith(
        "\nsmcp-sync authorize: authorization of MCP server 'locked' failed "
        '(OAuthTokenError: Token exchange failed (401): {"error": "invalid_client"})\n'
    )
    # the authorization server's answer is in the message; the mcp SDK's own ERROR, a traceback, is not shown
    assert "Traceback" not in err and "ERROR" not in err
    assert out == ""  # a client credentials mode shows no URL
    assert issuer.grants["client_credentials"] == grants
    assert wrong not in err and secret not in err
    assert [path for path in stored_tokens(tmp_path) if "tokens" in json.loads(path.read_text())] == []
