"""The client credentials modes beyond test_oauth_modes.py (docs/computer/oauth.md), with the same real parts: a JWT signed by each RS* algorithm (and ES384) with a
key made here; a key that cannot sign its algorithm refused when configured; and a scope
step-up — an MCP server answering a call 403 ``insufficient_scope`` naming a wider scope
(tests/mcp_servers/oauth_server.py ``--step-up``), which a client credentials grant obtains
asking nobody over streamable HTTP, and which is 4007 where the authorization server
refuses it, over SSE, and for an authorization code grant. Keys, secrets and tokens are
shown nowhere.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from smcp_sync.computer import Computer, ConfigError, FileTokenStore, allow_all
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.errors import ErrorCode
from smcp_sync.computer import Inputs

from ..authorization_server import AuthorizationServer
from ..helpers import FAST, http_config, start_http_server, stop
from .test_oauth import OAUTH_SERVER
from .test_oauth_modes import SECRET_INPUT

pytestmark = pytest.mark.timeout(60)

KEY_INPUT = {"id": "oauth_key", "type": "promptString", "description": "private key", "password": True}


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        yield server


def jwt_computer(
    url: str, issuer: AuthorizationServer, client_id: str, private_pem: str, algorithm: str, store: Path
) -> Computer:
    mode = {
        "type": "clientCredentialsPrivateKeyJwt",
        "clientId": client_id,
        "privateKeyInput": "oauth_key",
        "algorithm": algorithm,
        "issuer": issuer.url,
    }
    return oauth_computer(url, mode, KEY_INPUT, private_pem, store)


def key_pair(algorithm: str, private_format: serialization.PrivateFormat) -> tuple[str, str]:
    """(private PEM, public PEM) of a new key fit for `algorithm`."""
    key: Any
    if algorithm.startswith("RS"):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP384R1() if algorithm == "ES384" else ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, private_format, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


def key_body(private_pem: str) -> str:
    """A line from the middle of a PEM key: what a leak of it would show."""
    lines = private_pem.strip().splitlines()
    return lines[len(lines) // 2]


@pytest.mark.parametrize(
    ("algorithm", "private_format"),
    [
        ("RS256", serialization.PrivateFormat.TraditionalOpenSSL),  # "BEGIN RSA PRIVATE KEY", as openssl genrsa writes
        ("RS256", serialization.PrivateFormat.PKCS8),
        ("RS384", serialization.PrivateFormat.PKCS8),
        ("RS512", serialization.PrivateFormat.PKCS8),
        ("ES384", serialization.PrivateFormat.PKCS8),
    ],
)
def test_client_credentials_with_a_jwt_signed_by_the_configured_algorithm(
    issuer: AuthorizationServer,
    protected: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    algorithm: str,
    private_format: serialization.PrivateFormat,
    no_leaks: None,
) -> None:
    caplog.set_level(logging.DEBUG)
    private_pem, public_pem = key_pair(algorithm, private_format)
    client_id, _ = issuer.add_client("private_key_jwt", public_key=public_pem)
    accepted = len(issuer.assertion_algorithms)
    with jwt_computer(protected, issuer, client_id, private_pem, algorithm, tmp_path) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        shown = json.dumps(to_wire(host.get_config()))
    assert issuer.assertion_algorithms[accepted:] == [algorithm]  # signed as configured, verified with the public key
    assert issuer.assertion_audiences[-1] == issuer.url  # no tokenEndpointAudience: the issuer (RFC 7523bis)
    stored = "".join(path.read_text() for path in tmp_path.iterdir())
    for place in (shown, stored, caplog.text):
        assert key_body(private_pem) not in place and "PRIVATE KEY" not in place


def public_pem_of_new_rsa_key() -> str:
    return key_pair("RS256", serialization.PrivateFormat.PKCS8)[1]


@pytest.mark.parametrize(
    ("algorithm", "key", "wanted"),
    [
        ("RS256", lambda: key_pair("ES256", serialization.PrivateFormat.PKCS8)[0], "an RSA key"),
        ("ES256", lambda: key_pair("RS256", serialization.PrivateFormat.PKCS8)[0], "an EC key on curve secp256r1"),
        ("ES384", lambda: key_pair("ES256", serialization.PrivateFormat.PKCS8)[0], "an EC key on curve secp384r1"),
        ("RS512", public_pem_of_new_rsa_key, "an RSA key"),  # the public half pasted by mistake
        ("RS256", lambda: "-----BEGIN PRIVATE KEY-----\nnot-base64-material\n-----END PRIVATE KEY-----\n", "an RSA key"),
    ],
    ids=["ec-key-for-RS256", "rsa-key-for-ES256", "p256-key-for-ES384", "public-key", "not-a-key"],
)
def test_a_private_key_that_cannot_sign_the_algorithm_is_refused_when_configured_naming_the_input(
    issuer: AuthorizationServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    algorithm: str,
    key: Any,
    wanted: str,
    no_leaks: None,
) -> None:
    """Not at every connection attempt with PyJWT's message (a server restarting for ever,
    its calls 4001 unknown tool): at once, a 400 naming the server, the input and the key wanted."""
    caplog.set_level(logging.DEBUG)
    pem = key()
    client_id, _ = issuer.add_client("private_key_jwt", public_key=public_pem_of_new_rsa_key())
    with pytest.raises(ConfigError) as refused:
        jwt_computer("http://127.0.0.1:9/mcp", issuer, client_id, pem, algorithm, tmp_path)
    assert refused.value.code == 400
    assert refused.value.message == (
        f"MCP server 'locked': input 'oauth_key' (oauth.mode.privateKeyInput) is not a private key for {algorithm}: "
        f"it must be {wanted}, in unencrypted PEM"
    )
    assert refused.value.details == {"field": "oauth.mode.privateKeyInput", "input": "oauth_key", "mcp_server": "locked"}
    assert key_body(pem) not in caplog.text


def test_set_input_with_a_key_that_cannot_sign_is_refused_and_the_server_goes_on_with_its_key(
    issuer: AuthorizationServer, protected: str, tmp_path: Path, no_leaks: None
) -> None:
    private_pem, public_pem = key_pair("RS256", serialization.PrivateFormat.PKCS8)
    client_id, _ = issuer.add_client("private_key_jwt", public_key=public_pem)
    wrong, _ = key_pair("ES256", serialization.PrivateFormat.PKCS8)
    with jwt_computer(protected, issuer, client_id, private_pem, "RS256", tmp_path) as host:
        host.start()
        with pytest.raises(ConfigError) as refused:
            host.set_input("oauth_key", wrong)
        assert refused.value.message.endswith("is not a private key for RS256: it must be an RSA key, in unencrypted PEM")
        issuer.revoke_everything()  # a new assertion is signed: with the key it had
        assert host.call_tool("locked__echo", {"text": "still"}, timeout=20).text == "still"
    assert issuer.assertion_algorithms[-1] == "RS256"


def secret_computer(
    url: str, issuer: AuthorizationServer, client_id: str, secret: str, store: Path, transport: str = "streamable"
) -> Computer:
    mode = {"type": "clientCredentialsSecret", "clientId": client_id, "clientSecretInput": "oauth_secret", "issuer": issuer.url}
    return oauth_computer(url, mode, SECRET_INPUT, secret, store, transport)


def oauth_computer(
    url: str, mode: dict[str, Any], secret_input: dict[str, Any], value: str, store: Path, transport: str = "streamable"
) -> Computer:
    """A Computer of MCP server 'locked' at `url` with oauth `mode`, whose one secret input
    (`secret_input`) holds `value`."""
    config = http_config("locked", transport, url, oauth={"scopes": ["tools"], "mode": mode})
    return Computer(
        "c",
        [config],
        policy=FAST,
        confirm=allow_all,
        oauth_store=FileTokenStore(store),
        inputs=Inputs(definitions=[secret_input], values={secret_input["id"]: value}),
    )


def test_a_call_answered_403_insufficient_scope_gets_a_token_with_the_wider_scope_asking_nobody(
    issuer: AuthorizationServer,
    protected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    no_leaks: None,
) -> None:
    """The server wants ``admin`` for `add`: the SDK asks the authorization server for the
    scope it had together with the one challenged, so `echo` goes on working."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(issuer, "grantable", {"admin"})
    client_id, secret = issuer.add_client("client_secret_basic")
    asked = len(issuer.scopes_asked)
    with secret_computer(protected, issuer, client_id, secret, tmp_path) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        assert issuer.scopes_asked[asked:] == ["tools"]
        assert host.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20).text == "5"  # nobody was asked
        assert issuer.scopes_asked[asked:] == ["tools", "tools admin"]
        assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert host.call_tool("locked__add", {"a": 1, "b": 1}, timeout=20).text == "2"
        assert issuer.scopes_asked[asked:] == ["tools", "tools admin"]  # the wider token serves both
    [stored] = [json.loads(path.read_text()) for path in tmp_path.iterdir()]
    assert json.loads(stored["tokens"])["token"]["scope"] == "tools admin"  # the next run starts with it
    leaked = [value for value in (secret, *issuer.issued) if value in caplog.text and not value.startswith("client-")]
    assert leaked == []


def test_a_wider_scope_the_authorization_server_refuses_is_4007_for_that_call_and_the_token_still_serves(
    issuer: AuthorizationServer,
    protected: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    no_leaks: None,
) -> None:
    """The server's own 403 reaches the caller (4007, the secret and tokens in no message or
    log line); the token it had still serves the other tools, and a revoked one is replaced
    with the scope the server asks for at connection."""
    caplog.set_level(logging.DEBUG)
    client_id, secret = issuer.add_client("client_secret_basic")  # `grantable` has no admin: invalid_scope
    asked = len(issuer.scopes_asked)
    with secret_computer(protected, issuer, client_id, secret, tmp_path) as host:
        host.start()
        refused = host.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20)
        assert refused.is_error and refused.error_code == ErrorCode.TOOL_AUTHORIZATION_FAILED
        assert refused.text == (
            "tool 'locked__add' was refused with its authorization on MCP server 'locked': "
            "tools/call 'add' failed: HTTP 403 from the MCP server"
        )
        assert refused.meta["mcp_server"] == "locked"
        assert issuer.scopes_asked[asked:] == ["tools", "tools admin"]  # it was asked for, and refused
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        issuer.revoke_everything()
        assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert issuer.scopes_asked[asked:] == ["tools", "tools admin", "tools"]
    warnings = [record.getMessage() for record in caplog.records if record.name.startswith("smcp_sync") and record.levelno >= logging.WARNING]
    assert (
        "MCP server 'locked': its OAuth grant was refused "
        '(OAuthTokenError: Token exchange failed (400): {"error": "invalid_scope"})'
    ) in warnings
    said = caplog.text + refused.text + json.dumps(refused.meta)
    leaked = [value for value in (secret, *issuer.issued) if value in said and not value.startswith("client-")]
    assert leaked == []


def test_over_sse_a_call_answered_403_insufficient_scope_is_4007_without_a_step_up(
    issuer: AuthorizationServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The SSE client's POSTs answer nothing (the answer comes on the event stream), so the
    refusal goes to the session at once (upstream_auth) and the SDK never sees the challenge."""
    monkeypatch.setattr(issuer, "grantable", {"admin"})
    proc, url = start_http_server(OAUTH_SERVER, "--transport", "sse", "--issuer", issuer.url, "--step-up", "add=admin")
    try:
        client_id, secret = issuer.add_client("client_secret_basic")
        asked = len(issuer.scopes_asked)
        with secret_computer(url, issuer, client_id, secret, tmp_path, transport="sse") as host:
            host.start()
            assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
            refused = host.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20)
            assert refused.is_error and refused.error_code == ErrorCode.TOOL_AUTHORIZATION_FAILED
            assert refused.meta["mcp_server"] == "locked"
            assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
        assert issuer.scopes_asked[asked:] == ["tools"]
    finally:
        stop(proc)


def test_an_authorization_code_server_answering_403_insufficient_scope_is_4007_and_nobody_is_sent_to_a_browser(
    issuer: AuthorizationServer, protected: str, tmp_path: Path, no_leaks: None
) -> None:
    """The contrast: a wider scope there needs the user, whom a call never asks for."""
    from .test_oauth import Browser

    oauth = {"scopes": ["tools"], "mode": {"type": "authorizationCode", "registration": "dynamic"}}
    config = http_config("locked", "streamable", protected, oauth=oauth)
    browser = Browser()
    with Computer("c", [config], policy=FAST, confirm=allow_all, oauth_store=FileTokenStore(tmp_path)) as host:
        host.start()
        assert host.authorize("locked", browser, timeout=30).running
        grants = dict(issuer.grants)
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        refused = host.call_tool("locked__add", {"a": 2, "b": 3}, timeout=20)
        assert refused.is_error and refused.error_code == ErrorCode.TOOL_AUTHORIZATION_FAILED
        assert refused.meta["auth_hint"]["action"] == "token_refresh_required"
    assert len(browser.opened) == 1 and issuer.grants == grants
