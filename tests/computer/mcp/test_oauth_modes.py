"""The oauth block's other modes (docs/computer/oauth.md), with the real parts
of test_oauth.py: the client credentials grant (a secret, or a signed JWT), confidential
pre-registered clients (client_secret_basic / client_secret_post, as the authorization
server offers), a client named by its metadata document's https URL (CIMD), and the
``resource`` option. Secrets come from inputs and are shown nowhere.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterator

import httpx2
import pytest

from smcp_sync.computer import Computer, FileTokenStore, OAuthAuthorizationError, allow_all
from smcp_sync.protocol.codec import to_wire
from smcp_sync.computer import Inputs

from skills.http_files import http_files
from ..authorization_server import AuthorizationServer, loopback_tls
from ..helpers import FAST, http_config, start_http_server, stop
from .test_oauth import OAUTH_SERVER, Browser, assert_authorization_needed, protected_server

pytestmark = pytest.mark.timeout(90)

SECRET_INPUT = {"id": "oauth_secret", "type": "promptString", "description": "client secret", "password": True}


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[AuthorizationServer, str]]:
    with protected_server() as provided:
        yield provided


def computer(url: str, mode: dict[str, Any], tmp_path: Path, transport: str = "streamable", **options: Any) -> Computer:
    config = http_config("locked", transport, url, oauth={"scopes": ["tools"], "mode": mode, **options})
    return Computer(
        "c",
        [config],
        policy=FAST,
        confirm=allow_all,
        oauth_store=FileTokenStore(tmp_path / "oauth"),
        inputs=Inputs(definitions=[SECRET_INPUT]),
    )


def web_view(authorization_url: str) -> str:
    """The host's own web view: it stops at its redirect and hands the URL back."""
    answer = httpx2.get(authorization_url, follow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]


def test_client_credentials_with_a_secret_need_nobody_a_wrong_secret_is_4006_and_the_secret_is_shown_nowhere(
    provider: tuple[AuthorizationServer, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    no_leaks: None,
) -> None:
    issuer, url = provider
    caplog.set_level(logging.DEBUG)
    client_id, secret = issuer.add_client("client_secret_basic")
    monkeypatch.setenv("A2C_SMCP_oauth_secret", "not-the-secret")
    granted = issuer.grants["client_credentials"]
    mode = {"type": "clientCredentialsSecret", "clientId": client_id, "clientSecretInput": "oauth_secret", "issuer": issuer.url}
    with computer(url, mode, tmp_path) as host:
        host.start()
        assert_authorization_needed(host.call_tool("locked__echo", {"text": "hi"}, timeout=20))  # refused: 4006 at once
        assert "invalid_client" not in host.servers.statuses()[0].error
        assert host.set_input("oauth_secret", secret) == ["locked"]  # configured again, with the right one
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"  # nobody authorized it
        assert issuer.grants["client_credentials"] == granted + 1
        issuer.revoke_everything()  # a new token is fetched, again asking nobody
        assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert issuer.grants["client_credentials"] == granted + 2
        issuer.revoke_everything()
        urls: list[str] = []
        assert host.authorize("locked", urls.append, timeout=20).running and urls == []  # a token, no URL shown
        assert issuer.grants["client_credentials"] == granted + 3
        shown = json.dumps(to_wire(host.get_config()))
    assert "oauth_secret" in shown and secret not in shown
    stored = "".join(path.read_text() for path in (tmp_path / "oauth").iterdir())
    assert secret not in stored and secret not in caplog.text


def test_client_credentials_with_a_signed_jwt(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, no_leaks: None
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    issuer, url = provider
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    client_id, _ = issuer.add_client("private_key_jwt", public_key=public.decode())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    mode = {
        "type": "clientCredentialsPrivateKeyJwt",
        "clientId": client_id,
        "privateKeyInput": "oauth_secret",
        "algorithm": "ES256",
        "tokenEndpointAudience": f"{issuer.url}/token",
        "issuer": issuer.url,
    }
    config = http_config("locked", "streamable", url, oauth={"scopes": ["tools"], "mode": mode})
    store = FileTokenStore(tmp_path)
    inputs = [SECRET_INPUT]
    with Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=store, inputs=Inputs(definitions=inputs, values={"oauth_secret": private.decode()})) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
    assert issuer.assertion_audiences[-1] == f"{issuer.url}/token"  # not the issuer, as configured


@pytest.mark.parametrize(
    ("method", "offered"),
    [
        ("client_secret_basic", ["none", "client_secret_basic", "client_secret_post"]),
        ("client_secret_post", ["none", "client_secret_post"]),
    ],
)
def test_a_confidential_preregistered_client_authenticates_as_the_authorization_server_offers(
    provider: tuple[AuthorizationServer, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    offered: list[str],
    no_leaks: None,
) -> None:
    issuer, url = provider
    client_id, secret = issuer.add_client(method, redirect_uris=["myapp://oauth"])
    monkeypatch.setenv("A2C_SMCP_oauth_secret", secret)
    monkeypatch.setattr(issuer, "auth_methods", offered)
    monkeypatch.setattr(issuer, "ttl", 1.0)
    mode = {"type": "authorizationCode", "registration": "preregistered", "clientId": client_id, "clientSecretInput": "oauth_secret"}
    registrations = len(issuer.clients)
    with computer(url, mode, tmp_path) as host:
        host.start()
        assert_authorization_needed(host.call_tool("locked__echo", {"text": "hi"}, timeout=20))
        assert host.authorize("locked", web_view, timeout=30, redirect_uri="myapp://oauth").running
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        refreshes = issuer.grants["refresh_token"]
        time.sleep(1.2)  # the token expires: refreshed, the client authenticated the same way
        assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert issuer.grants["refresh_token"] == refreshes + 1
    assert len(issuer.clients) == registrations
    stored = "".join(path.read_text() for path in (tmp_path / "oauth").iterdir())
    assert "tokens" in json.loads(stored) and secret not in stored  # the secret stays in its input


@pytest.mark.parametrize("supported", [True, False])
def test_a_client_named_by_the_url_of_its_metadata_document_where_supported_else_registered(
    provider: tuple[AuthorizationServer, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    supported: bool,
    no_leaks: None,
) -> None:
    issuer, url = provider
    server_tls, client_tls = loopback_tls(tmp_path)
    monkeypatch.setattr(issuer, "tls", client_tls)
    monkeypatch.setattr(issuer, "client_metadata_documents", supported)
    documents: dict[str, bytes] = {}
    with http_files(documents, tls=server_tls) as base:
        document_url = f"{base}/smcp/client.json"
        documents["smcp/client.json"] = json.dumps(
            {"client_id": document_url, "client_name": "smcp_sync tests", "redirect_uris": ["http://127.0.0.1/callback"]}
        ).encode()
        registrations = len(issuer.clients)
        browser = Browser()
        mode = {"type": "authorizationCode", "registration": "clientMetadataDocument", "url": document_url}
        with computer(url, mode, tmp_path) as host:
            host.start()
            assert host.authorize("locked", browser, timeout=30).running
            assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
    client_id = httpx2.URL(browser.opened[0]).params["client_id"]
    if supported:
        assert client_id == document_url and len(issuer.clients) == registrations  # no dynamic registration
    else:
        assert client_id != document_url and len(issuer.clients) == registrations + 1


def test_the_resource_option_is_the_resource_asked_for(
    provider: tuple[AuthorizationServer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The server, reached at a loopback URL, names its canonical URL as its resource (as
    one behind a gateway does): the SDK alone refuses that metadata."""
    issuer, _ = provider
    resource = "https://mcp.example.test/sse"
    monkeypatch.setattr(issuer, "resource", resource)
    monkeypatch.setattr(issuer, "resources_asked", [])
    proc, url = start_http_server(OAUTH_SERVER, "--transport", "sse", "--issuer", issuer.url, "--resource", resource)
    try:
        mode = {"type": "authorizationCode", "registration": "dynamic"}
        with computer(url, mode, tmp_path, transport="sse", resource=resource) as host:
            host.start()
            assert host.authorize("locked", Browser(), timeout=30).running
            assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        other = {"type": "authorizationCode", "registration": "dynamic"}
        with computer(url, other, tmp_path / "other", transport="sse", resource="https://mcp.example.test/other") as host:
            host.start()
            with pytest.raises(OAuthAuthorizationError) as refused:  # the server names another resource
                host.authorize("locked", Browser(), timeout=30)
            assert refused.value.message == (
                "authorization of MCP server 'locked' failed (OAuthFlowError: "
                "the protected resource metadata names another resource than oauth.resource)"
            )
    finally:
        stop(proc)
    assert issuer.resources_asked == [resource, resource]  # the authorization and the token request
