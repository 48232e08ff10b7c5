"""A small OAuth 2.1 authorization server for the tests, on 127.0.0.1 in a thread: what a
hosted MCP server's provider does, so the `mcp` SDK's client flow runs for real.

RFC 8414 metadata, RFC 7591 dynamic registration (public clients), an authorize endpoint
that grants at once (the user says yes) and redirects with a code, PKCE S256 checked at
the token endpoint, refresh tokens (rotated), RFC 7009 revocation and RFC 7662
introspection (the resource server's token verifier asks it). Tokens live `ttl` seconds.
Everything it issued is in `issued`, so a test can look for it where it must not be.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


class AuthorizationServer:
    def __init__(self, ttl: float = 60.0, scope: str = "tools") -> None:
        self.ttl = ttl
        self.scope = scope
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        #: Every client id, code and token handed out.
        self.issued: list[str] = []
        self.grants = {"authorization_code": 0, "refresh_token": 0}
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
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "revocation_endpoint": f"{self.url}/revoke",
            "introspection_endpoint": f"{self.url}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [self.scope],
        }

    def register(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
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
        client = self.clients.get(query.get("client_id", ""))
        if client is None or query.get("redirect_uri") not in client.get("redirect_uris", ()):
            return 400, "unknown client or redirect_uri"
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return 400, "code flow with PKCE S256 only"
        code = self._new("code")
        with self._lock:
            self.codes[code] = {**query}
        return (
            302,
            f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}",
        )

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = form.get("grant_type")
        with self._lock:
            if grant == "authorization_code":
                granted = self.codes.pop(form.get("code", ""), None)
                if granted is None or granted["client_id"] != form.get("client_id"):
                    return 400, {"error": "invalid_grant"}
                if granted["redirect_uri"] != form.get("redirect_uri") or not _pkce_ok(form, granted):
                    return 400, {"error": "invalid_grant"}
                client_id = granted["client_id"]
            elif grant == "refresh_token":
                old = self.refresh.pop(form.get("refresh_token", ""), None)
                if old is None or old["client_id"] != form.get("client_id"):
                    return 400, {"error": "invalid_grant"}
                client_id = old["client_id"]
            else:
                return 400, {"error": "unsupported_grant_type"}
            self.grants[grant] += 1
            access, refresh = self._new("access"), self._new("refresh")
            self.access[access] = {
                "client_id": client_id,
                "exp": time.time() + self.ttl,
            }
            self.refresh[refresh] = {"client_id": client_id}
        body = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.ttl),
            "refresh_token": refresh,
        }
        return 200, {**body, "scope": self.scope}

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
            "scope": self.scope,
            "exp": int(token["exp"]),
        }

    def _new(self, kind: str) -> str:
        value = f"{kind}-{secrets.token_urlsafe(16)}"
        self.issued.append(value)
        return value


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
                self._json(*server.token(form))
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
