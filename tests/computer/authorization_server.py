"""A small OAuth 2.1 authorization server for the tests, on 127.0.0.1 in a thread: what a
hosted MCP server's provider does, so the `mcp` SDK's client flow runs for real.

RFC 8414 metadata, RFC 7591 dynamic registration (public clients), an authorize endpoint
that grants at once (the user says yes) and redirects with a code, PKCE S256 checked at
the token endpoint, refresh tokens (rotated), RFC 7009 revocation and RFC 7662
introspection (the resource server's token verifier asks it). Tokens live `ttl` seconds.
Everything it issued is in `issued`, so a test can look for it where it must not be.

Also confidential clients (`add_client`: a secret sent by ``client_secret_basic`` or
``client_secret_post``, or a public key for ``private_key_jwt`` assertions), each allowed
only the method it was registered with among those `auth_methods` offers; the client
credentials grant; clients named by the https URL of their client metadata document
(CIMD, fetched with `tls`); and, with `resource` set, the RFC 8707 resource checked in
every authorization and token request. Loopback redirects match on any port (RFC 8252).
A client credentials token carries the scope asked for, if `grantable` allows all of it
(else ``invalid_scope``); an authorization code token what `grantable` allows of it; with `users_refuse` set, the user denies every authorization;
`advertised_issuer` and `registration_refused` make it misconfigured or closed. Cross-app
access: the jwt-bearer grant takes an identity assertion (ID-JAG) signed by the
identity provider whose key is `idp_public_key`, for this server and the resource asked.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import secrets
import ssl
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt

from smcp_sync.computer.config.oauth_mode import JWT_ALGORITHMS  # accepted: each one an oauth.mode may name

#: RFC 7523's grant, which cross-app access uses with an identity assertion.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class AuthorizationServer:
    def __init__(self, ttl: float = 60.0, scope: str = "tools", tls: ssl.SSLContext | None = None) -> None:
        self.ttl = ttl
        self.scope = scope
        #: Trusted when fetching a client metadata document.
        self.tls = tls
        #: The client authentication methods metadata offers (and the token endpoint accepts).
        self.auth_methods = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]
        #: When set: the only RFC 8707 resource authorization and token requests may name.
        self.resource: str | None = None
        #: The resource named by each authorization and token request, in order.
        self.resources_asked: list[str | None] = []
        #: Whether metadata says client ids may be client metadata document URLs.
        self.client_metadata_documents = True
        #: The audience and the algorithm (its header's ``alg``) of each private_key_jwt assertion accepted.
        self.assertion_audiences: list[Any] = []
        self.assertion_algorithms: list[str] = []
        #: The scopes a client credentials grant may be given besides `scope`.
        self.grantable: set[str] = set()
        #: The scope each client credentials request asked for (None: none), in order.
        self.scopes_asked: list[str | None] = []
        #: The scope each authorization the user granted asked for (None: none), in order.
        self.authorizations_asked: list[str | None] = []
        #: When set, the user denies every authorization (a redirect with access_denied).
        self.users_refuse = False
        #: When set, the issuer its metadata names (not its own URL: a misconfigured server).
        self.advertised_issuer: str | None = None
        #: When set, dynamic registration is refused (400 invalid_client_metadata).
        self.registration_refused = False
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        #: Every client id, code and token handed out.
        self.issued: list[str] = []
        self.grants = {"authorization_code": 0, "refresh_token": 0, "client_credentials": 0, JWT_BEARER: 0}
        #: The public key (PEM) of the identity provider whose identity assertions (ID-JAGs,
        #: cross-app access) the jwt-bearer grant accepts; their claims, in order.
        self.idp_public_key = ""
        self.identity_assertions: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            name="test-authorization-server",
            daemon=True,
        )

    def __enter__(self) -> AuthorizationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def revoke_everything(self) -> None:
        """The user withdraws every grant at the provider."""
        with self._lock:
            self.access.clear()
            self.refresh.clear()

    # -- endpoints (called from the handler's threads) ------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.advertised_issuer or self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "revocation_endpoint": f"{self.url}/revoke",
            "introspection_endpoint": f"{self.url}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
            "client_id_metadata_document_supported": self.client_metadata_documents,
            "scopes_supported": [self.scope],
        }

    def add_client(self, method: str, redirect_uris: list[str] = (), public_key: str = "") -> tuple[str, str]:
        """A pre-registered confidential client authenticating by `method`: (id, secret)."""
        client_id, secret = self._new("client"), self._new("secret")
        with self._lock:
            self.clients[client_id] = {
                "client_id": client_id,
                "client_secret": secret,
                "token_endpoint_auth_method": method,
                "redirect_uris": list(redirect_uris),
                "public_key": public_key,
            }
        return client_id, secret

    def register(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.registration_refused:
            return 400, {"error": "invalid_client_metadata", "error_description": "registration is closed"}
        client_id = self._new("client")
        client = {
            **request,
            "client_id": client_id,
            "token_endpoint_auth_method": "none",
        }
        with self._lock:
            self.clients[client_id] = client
        return 201, client

    def authorize(self, query: dict[str, str]) -> tuple[int, str]:
        """(status, Location or error text)."""
        client = self._client(query.get("client_id", ""))
        if client is None or not _redirect_allowed(query.get("redirect_uri", ""), client.get("redirect_uris", ())):
            return 400, "unknown client or redirect_uri"
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return 400, "code flow with PKCE S256 only"
        if not self._resource_ok(query):
            return 400, "invalid_target"
        if self.users_refuse:
            return 302, f"{query['redirect_uri']}?{urlencode({'error': 'access_denied', 'state': query.get('state', '')})}"
        code = self._new("code")
        with self._lock:
            self.codes[code] = {**query}
        return (
            302,
            f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}",
        )

    def token(self, form: dict[str, str], basic: str | None = None) -> tuple[int, dict[str, Any]]:
        """`basic`: the request's ``Authorization: Basic`` credentials, if any."""
        grant = form.get("grant_type")
        authenticated = self._authenticated(form, basic)
        if authenticated is None:
            return 401, {"error": "invalid_client"}
        if not self._resource_ok(form):
            return 400, {"error": "invalid_target"}
        scope = self.scope
        with self._lock:
            if grant == "authorization_code":
                granted = self.codes.pop(form.get("code", ""), None)
                if granted is None or granted["client_id"] != authenticated:
                    return 400, {"error": "invalid_grant"}
                if granted["redirect_uri"] != form.get("redirect_uri") or not _pkce_ok(form, granted):
                    return 400, {"error": "invalid_grant"}
                client_id = granted["client_id"]
                self.authorizations_asked.append(granted.get("scope"))
                asked = set(granted.get("scope", self.scope).split())
                scope = " ".join(sorted(asked & (self.grantable | {self.scope}))) or self.scope
            elif grant == "refresh_token":
                old = self.refresh.pop(form.get("refresh_token", ""), None)
                if old is None or old["client_id"] != authenticated:
                    return 400, {"error": "invalid_grant"}
                client_id, scope = old["client_id"], old["scope"]
            elif grant == "client_credentials" and self.clients.get(authenticated, {}).get("client_secret"):
                client_id = authenticated
                self.scopes_asked.append(form.get("scope"))
                scope = form.get("scope", self.scope)
                if not set(scope.split()) <= self.grantable | {self.scope}:
                    return 400, {"error": "invalid_scope"}
            elif grant == JWT_BEARER and self.clients.get(authenticated, {}).get("client_secret"):
                claims = self._identity_assertion(form)
                if claims is None:
                    return 400, {"error": "invalid_grant"}
                self.identity_assertions.append(claims)
                client_id, scope = authenticated, form.get("scope", self.scope)
            else:
                return 400, {"error": "unsupported_grant_type"}
            self.grants[grant] += 1
            access, refresh = self._new("access"), self._new("refresh")
            self.access[access] = {
                "client_id": client_id,
                "exp": time.time() + self.ttl,
                "scope": scope,
            }
            self.refresh[refresh] = {"client_id": client_id, "scope": scope}
        body = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.ttl),
            "refresh_token": refresh,
        }
        return 200, {**body, "scope": scope}

    def revoke(self, form: dict[str, str]) -> None:
        with self._lock:
            self.access.pop(form.get("token", ""), None)
            self.refresh.pop(form.get("token", ""), None)

    def introspect(self, form: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            token = self.access.get(form.get("token", ""))
        if token is None or token["exp"] < time.time():
            return {"active": False}
        return {
            "active": True,
            "client_id": token["client_id"],
            "scope": token["scope"],
            "exp": int(token["exp"]),
        }

    def _client(self, client_id: str) -> dict[str, Any] | None:
        """A registered client, or the one a client metadata document at `client_id` describes."""
        if not client_id.startswith("https://"):
            return self.clients.get(client_id)
        with urllib.request.urlopen(client_id, timeout=10, context=self.tls) as answer:
            document = json.loads(answer.read())
        return document if document.get("client_id") == client_id else None

    def _authenticated(self, form: dict[str, str], basic: str | None) -> str | None:
        """The client a token request authenticates as (by the method it was registered
        with, if `auth_methods` offers it), or None."""
        if basic is not None:
            client_id, _, secret = base64.b64decode(basic).decode().partition(":")
            used, proof = "client_secret_basic", urllib.parse.unquote(secret)
            client_id = urllib.parse.unquote(client_id)
        elif "client_secret" in form:
            client_id, used, proof = form.get("client_id", ""), "client_secret_post", form["client_secret"]
        elif "client_assertion" in form:
            used, proof = "private_key_jwt", form["client_assertion"]
            client_id = jwt.decode(proof, options={"verify_signature": False}).get("sub", "")
        else:
            client_id, used, proof = form.get("client_id", ""), "none", ""
        client = self._client(client_id)
        method = client.get("token_endpoint_auth_method", "none") if client else None
        if client is None or method != used or used not in self.auth_methods:
            return None
        if used == "private_key_jwt":
            try:  # RFC 7523: its issuer, or its token endpoint
                claims = jwt.decode(
                    proof, client["public_key"], algorithms=list(JWT_ALGORITHMS), audience=[self.url, f"{self.url}/token"]
                )
            except jwt.InvalidTokenError:
                return None
            self.assertion_audiences.append(claims["aud"])
            self.assertion_algorithms.append(jwt.get_unverified_header(proof)["alg"])
            return client_id if claims.get("iss") == client_id else None
        if used != "none" and not secrets.compare_digest(proof, client["client_secret"]):
            return None
        return client_id

    def _identity_assertion(self, form: dict[str, str]) -> dict[str, Any] | None:
        """The claims of the form's ID-JAG when the identity provider signed it for this
        server and for the resource the request names, else None."""
        try:
            claims = jwt.decode(form.get("assertion", ""), self.idp_public_key, algorithms=["RS256"], audience=self.url)
        except jwt.InvalidTokenError:
            return None
        return claims if claims.get("resource") == form.get("resource") else None

    def _resource_ok(self, request: dict[str, str]) -> bool:
        self.resources_asked.append(request.get("resource"))
        return self.resource is None or request.get("resource") == self.resource

    def _new(self, kind: str) -> str:
        value = f"{kind}-{secrets.token_urlsafe(16)}"
        self.issued.append(value)
        return value


def _redirect_allowed(uri: str, registered: Any) -> bool:
    """Exact, or for a loopback redirect any port (RFC 8252 section 7.3)."""
    parts = urlsplit(uri)
    if parts.hostname == "127.0.0.1" and parts.scheme == "http":
        return any(urlsplit(r)._replace(netloc="127.0.0.1") == parts._replace(netloc="127.0.0.1") for r in registered)
    return uri in registered


def _pkce_ok(form: dict[str, str], granted: dict[str, str]) -> bool:
    digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == granted.get("code_challenge")


def _handler(server: AuthorizationServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            target = urlsplit(self.path)
            if target.path == "/.well-known/oauth-authorization-server":
                self._json(200, server.metadata())
            elif target.path == "/authorize":
                status, where = server.authorize({k: v[0] for k, v in parse_qs(target.query).items()})
                if status == 302:
                    self.send_response(302)
                    self.send_header("Location", where)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._json(status, {"error": where})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            path = urlsplit(self.path).path
            if path == "/register":
                self._json(*server.register(json.loads(raw)))
                return
            form = {k: v[0] for k, v in parse_qs(raw).items()}
            if path == "/token":
                authorization = self.headers.get("Authorization", "")
                basic = authorization[6:] if authorization.startswith("Basic ") else None
                self._json(*server.token(form, basic))
            elif path == "/revoke":
                server.revoke(form)
                self._json(200, {})
            elif path == "/introspect":
                self._json(200, server.introspect(form))
            else:
                self._json(404, {"error": "not found"})

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def loopback_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) TLS contexts for 127.0.0.1: a self-signed certificate made in
    `directory`, which only the client context trusts."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    return server, ssl.create_default_context(cafile=str(cert_file))
