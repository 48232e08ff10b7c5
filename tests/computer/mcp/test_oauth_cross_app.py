"""Cross-app access (docs/computer/mcp-client.md): the ``identityAssertion`` OAuth
mode exchanges an identity assertion (ID-JAG) from the enterprise's identity provider for
a token (RFC 7523 jwt-bearer), through the `mcp` SDK's IdentityAssertionOAuthProvider,
with test_oauth.py's real parts. The tests' authorization server trusts an identity
provider whose key is made here. The assertion comes from an input (a secret), or from
the host's callable at each exchange; neither key, secret nor assertion is shown."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any, Iterator

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from smcp_sync.computer import (
    ClientFeatures,
    Computer,
    ConfigError,
    IdentityAssertionRequest,
    MemoryTokenStore,
    allow_all,
)
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.errors import ErrorCode
from smcp_sync.computer import Inputs

from ..authorization_server import JWT_BEARER, AuthorizationServer
from ..helpers import FAST, http_config
from .test_oauth_client_credentials import key_pair
from .test_oauth_modes import SECRET_INPUT

pytestmark = pytest.mark.timeout(60)

ASSERTION_INPUT = {"id": "id_jag", "type": "promptString", "description": "identity assertion", "password": True}
IDP_PRIVATE, IDP_PUBLIC = key_pair("RS256", serialization.PrivateFormat.PKCS8)


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with AuthorizationServer() as server:
        server.idp_public_key = IDP_PUBLIC
        yield server


def id_jag(audience: str, resource: str, key: str = IDP_PRIVATE) -> str:
    """An ID-JAG for user alice, as the enterprise's identity provider issues it."""
    now = int(time.time())
    claims = {"iss": "https://idp.example", "sub": "alice", "aud": audience, "resource": resource}
    return jwt.encode({**claims, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}, key, algorithm="RS256")


def cross_app_computer(
    url: str, issuer: AuthorizationServer, assertion: str | None = None, method: str | None = None, **options: Any
) -> Computer:
    """A Computer whose client is registered to send its secret by `method` (None: the
    mode's default, ``client_secret_post``; else the mode's ``tokenEndpointAuthMethod``)."""
    client_id, secret = issuer.add_client(method or "client_secret_post")
    mode = {"type": "identityAssertion", "clientId": client_id, "clientSecretInput": "oauth_secret", "issuer": issuer.url}
    if method is not None:
        mode["tokenEndpointAuthMethod"] = method
    values = {"oauth_secret": secret}
    if assertion is not None:
        mode["assertionInput"] = "id_jag"
        values["id_jag"] = assertion
    config = http_config("locked", "streamable", url, oauth={"scopes": ["tools"], "mode": mode})
    return Computer(
        "c",
        [config],
        policy=FAST,
        confirm=allow_all,
        oauth_store=MemoryTokenStore(),
        **options,
        inputs=Inputs(definitions=[SECRET_INPUT, ASSERTION_INPUT], values=values),
    )  # fmt: skip


def test_an_assertion_from_an_input_is_exchanged_for_a_token(
    issuer: AuthorizationServer, protected: str, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    caplog.set_level(logging.DEBUG)
    assertion = id_jag(issuer.url, protected)
    exchanges = issuer.grants[JWT_BEARER]
    with cross_app_computer(protected, issuer, assertion) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        shown = json.dumps(to_wire(host.get_config()))
    assert issuer.grants[JWT_BEARER] == exchanges + 1
    assert issuer.identity_assertions[-1]["sub"] == "alice"
    assert assertion not in caplog.text + shown


def test_an_assertion_from_the_hosts_callable_at_each_exchange(
    issuer: AuthorizationServer, protected: str, no_leaks: None
) -> None:
    asked: list[IdentityAssertionRequest] = []

    def identity_assertion(request: IdentityAssertionRequest) -> str:
        asked.append(request)
        return id_jag(request.audience, request.resource)

    with cross_app_computer(protected, issuer, client_features=ClientFeatures(identity_assertion=identity_assertion)) as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
        issuer.revoke_everything()  # the token is gone: a new assertion is asked for
        assert host.call_tool("locked__echo", {"text": "again"}, timeout=20).text == "again"
    assert asked == [IdentityAssertionRequest("locked", issuer.url, protected)] * 2


def test_a_client_registered_for_client_secret_basic_sends_its_secret_so(
    issuer: AuthorizationServer, protected: str, no_leaks: None
) -> None:
    """``tokenEndpointAuthMethod`` (the conformance suite's authorization server accepts
    only client_secret_basic); the tests' authorization server refuses any other method."""
    exchanges = issuer.grants[JWT_BEARER]
    with cross_app_computer(protected, issuer, id_jag(issuer.url, protected), "client_secret_basic") as host:
        host.start()
        assert host.call_tool("locked__echo", {"text": "hi"}, timeout=20).text == "hi"
    assert issuer.grants[JWT_BEARER] == exchanges + 1
    with pytest.raises(ConfigError) as refused:
        cross_app_computer(protected, issuer, "an assertion", "private_key_jwt")
    assert refused.value.details == {"field": "oauth.mode.tokenEndpointAuthMethod", "mcp_server": "locked"}


def test_without_an_assertion_input_or_a_callable_the_config_is_refused(
    issuer: AuthorizationServer, no_leaks: None
) -> None:
    with pytest.raises(ConfigError) as refused:
        cross_app_computer("http://127.0.0.1:9/mcp", issuer)
    assert refused.value.details == {"field": "oauth.mode.assertionInput", "mcp_server": "locked"}


def test_an_assertion_the_authorization_server_refuses_is_4006_and_shown_nowhere(
    issuer: AuthorizationServer, protected: str, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    caplog.set_level(logging.DEBUG)
    other_key, _ = key_pair("RS256", serialization.PrivateFormat.PKCS8)
    forged = id_jag(issuer.url, protected, key=other_key)
    with cross_app_computer(protected, issuer, forged) as host:
        host.start()
        refused = host.call_tool("locked__echo", {"text": "hi"}, timeout=20)
    assert refused.is_error and refused.error_code == ErrorCode.TOOL_AUTHORIZATION_REQUIRED
    assert 'its OAuth grant was refused (OAuthTokenError: Token exchange failed (400): {"error": "invalid_grant"})' in caplog.text
    assert forged not in caplog.text + refused.text
