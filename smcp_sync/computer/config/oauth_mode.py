"""The ``oauth`` block's ``mode``, read into what `mcp.oauth` runs (docs/computer/oauth.md):
the five modes a2c-smcp 0.4.2's config accepts and cross-app access (``identityAssertion``,
an smcp_sync mode), checked when the server is configured so that a typo or a missing
field is a `ConfigError` naming the field, not a failure at the first call.

Secrets are never in the config: ``clientSecretInput`` / ``privateKeyInput`` name inputs
(resolved through `inputs`: the host's values, ``A2C_SMCP_<ID>``, the keyring, a prompt).
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, NoReturn, Union, cast
from urllib.parse import urlsplit

import attrs
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from .files import ConfigError

#: How an ``identityAssertion`` client may send its secret (``tokenEndpointAuthMethod``).
SecretMethod = Literal["client_secret_post", "client_secret_basic"]
SECRET_METHODS: tuple[SecretMethod, ...] = ("client_secret_post", "client_secret_basic")
#: The JWT algorithms of ``clientCredentialsPrivateKeyJwt`` (as a2c-smcp 0.4.2 lists them).
JWT_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384")
#: The EC curve each ES* algorithm signs with (RFC 7518 section 3.4).
_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1}


@attrs.frozen
class AuthorizationCode:
    """The authorization code grant (PKCE): the client registered dynamically (no field
    set), pre-registered (`client_id`, a confidential one also `secret_input`), or named by
    the URL of its client metadata document (`metadata_url`, CIMD)."""

    client_id: str | None = None
    secret_input: str | None = None
    metadata_url: str | None = None


@attrs.frozen
class ClientCredentials:
    """The client credentials grant (no user): the client authenticates with a secret
    (`secret_input`) or a JWT it signs with a private key (`private_key_input`). `issuer`
    (an smcp_sync field) pins the authorization server the credentials may be sent to."""

    client_id: str
    secret_input: str | None = None
    private_key_input: str | None = None
    algorithm: str = "RS256"
    audience: str | None = None
    issuer: str | None = None


@attrs.frozen
class IdentityAssertion:
    """Cross-app access: an identity assertion the enterprise's identity provider
    issued (an ID-JAG, RFC 7523 jwt-bearer) exchanged at `issuer` for a token, by a
    confidential client (`client_id`, `secret_input`), its secret sent by `auth_method`
    (the `mcp` SDK's default, ``client_secret_post``, unless the config says
    ``client_secret_basic``). The assertion is the value of `assertion_input`, else what
    the host's `ClientFeatures.identity_assertion` returns."""

    client_id: str
    secret_input: str
    issuer: str
    assertion_input: str | None = None
    auth_method: SecretMethod = "client_secret_post"


OAuthMode = Union[AuthorizationCode, ClientCredentials, IdentityAssertion]

#: (type, registration) -> (required keys, optional keys), camelCase as written.
_SHAPES: dict[tuple[Any, Any], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("authorizationCode", "dynamic"): ((), ()),
    ("authorizationCode", "preregistered"): (("clientId",), ("clientSecretInput",)),
    ("authorizationCode", "clientMetadataDocument"): (("url",), ()),
    ("clientCredentialsSecret", None): (("clientId", "clientSecretInput"), ("issuer",)),
    ("clientCredentialsPrivateKeyJwt", None): (
        ("clientId", "privateKeyInput"),
        ("algorithm", "tokenEndpointAudience", "issuer"),
    ),
    ("identityAssertion", None): (
        ("clientId", "clientSecretInput", "issuer"),
        ("assertionInput", "tokenEndpointAuthMethod"),
    ),
}


def oauth_mode(mode: Any, server: str) -> OAuthMode:
    """`mode` as written in the config, checked (`ConfigError` naming the field)."""
    if not isinstance(mode, Mapping):
        _refuse(server, "oauth.mode", 'an object such as {"type": "authorizationCode", "registration": "dynamic"}')
    kind = (mode.get("type"), mode.get("registration"))
    shape = _SHAPES.get(kind)
    if shape is None:
        _refuse(
            server,
            "oauth.mode",
            f"mode {kind[0]!r} / registration {kind[1]!r} is not one of: authorizationCode with registration "
            "dynamic, preregistered or clientMetadataDocument; clientCredentialsSecret; clientCredentialsPrivateKeyJwt; "
            "identityAssertion",
        )
    required, optional = shape
    for key in sorted(set(mode) - {"type", "registration", *required, *optional}):
        _refuse(server, f"oauth.mode.{key}", f"not a field of mode {kind[0]!r}")
    for key in (*required, *optional):
        if key in mode and (not isinstance(mode[key], str) or not mode[key]):
            _refuse(server, f"oauth.mode.{key}", "a non-empty string")
        if key in required and key not in mode:
            _refuse(server, f"oauth.mode.{key}", f"required by mode {kind[0]!r} / registration {kind[1]!r}")
    for key in ("url", "issuer", "tokenEndpointAudience"):
        if key in mode:
            _check_url(mode[key], server, f"oauth.mode.{key}", https_path=key == "url")
    if kind[0] == "authorizationCode":
        return AuthorizationCode(mode.get("clientId"), mode.get("clientSecretInput"), mode.get("url"))
    if kind[0] == "identityAssertion":
        method = mode.get("tokenEndpointAuthMethod", SECRET_METHODS[0])
        if method not in SECRET_METHODS:
            _refuse(server, "oauth.mode.tokenEndpointAuthMethod", f"one of {', '.join(SECRET_METHODS)}")
        secret, assertion = mode["clientSecretInput"], mode.get("assertionInput")
        return IdentityAssertion(mode["clientId"], secret, mode["issuer"], assertion, cast(SecretMethod, method))
    algorithm = mode.get("algorithm", "RS256")
    if algorithm not in JWT_ALGORITHMS:
        _refuse(server, "oauth.mode.algorithm", f"one of {', '.join(JWT_ALGORITHMS)}")
    return ClientCredentials(
        mode["clientId"],
        mode.get("clientSecretInput"),
        mode.get("privateKeyInput"),
        algorithm,
        mode.get("tokenEndpointAudience"),
        mode.get("issuer"),
    )


def check_resource(resource: Any, server: str) -> None:
    """The RFC 8707 ``resource``: an absolute http(s) URL without a fragment."""
    if not isinstance(resource, str):
        _refuse(server, "oauth.resource", "a URL string")
    _check_url(resource, server, "oauth.resource", https_path=False)
    if urlsplit(resource).fragment:
        _refuse(server, "oauth.resource", "a URL without a fragment (RFC 8707)")


def secret_inputs(mode: OAuthMode) -> list[str]:
    """The ids of the inputs holding `mode`'s secrets."""
    names = [mode.secret_input]
    if isinstance(mode, ClientCredentials):
        names.append(mode.private_key_input)
    elif isinstance(mode, IdentityAssertion):
        names.append(mode.assertion_input)
    return [name for name in names if name]


def check_private_key(pem: str, mode: ClientCredentials, server: str) -> None:
    """`pem` (the value of `mode`'s ``privateKeyInput``) can sign its ``algorithm``: an
    unencrypted PEM private key, RSA for RS*, EC on the algorithm's curve for ES*. Checked
    when the server is configured: PyJWT refuses such a key only at each connection
    attempt, and its message names no input. The key itself is in no message."""
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    curve = _CURVES.get(mode.algorithm)
    if curve is None:
        fits = isinstance(key, rsa.RSAPrivateKey)
    else:
        fits = isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, curve)
    if not fits:
        wanted = "an RSA key" if curve is None else f"an EC key on curve {curve.name}"
        raise ConfigError(
            f"MCP server {server!r}: input {mode.private_key_input!r} (oauth.mode.privateKeyInput) is not a private key "
            f"for {mode.algorithm}: it must be {wanted}, in unencrypted PEM",
            details={"field": "oauth.mode.privateKeyInput", "input": mode.private_key_input, "mcp_server": server},
        )


def _check_url(url: str, server: str, field: str, *, https_path: bool) -> None:
    parts = urlsplit(url)
    if https_path and (parts.scheme != "https" or parts.path in ("", "/")):
        _refuse(server, field, "an https URL with a path (a client metadata document's URL is its client id)")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        _refuse(server, field, "an absolute http(s) URL")


def _refuse(server: str, field: str, why: str) -> NoReturn:
    raise ConfigError(
        f"MCP server {server!r}: field {field!r} is not valid: {why}", details={"field": field, "mcp_server": server}
    )
