"""The test tool server over streamable HTTP or SSE as an OAuth-protected resource, built from the
`mcp` SDK's server auth support: its bearer middleware, protected resource metadata, and
a token verifier asking the authorization server (RFC 7662 introspection), so that a token
revoked there is refused here at once.

    python oauth_server.py --issuer http://127.0.0.1:<as-port> [--scope tools] [--transport streamable|sse]
        [--port 0] [--resource https://mcp.example.test/sse] [--step-up TOOL=SCOPE]

Prints ``PORT=<n>`` once serving (``_serve``); the MCP endpoint is ``/mcp`` (SSE: ``/sse``,
wired here as the SDK wires its streamable app: the SDK has no SSE app with auth).
``--resource`` (SSE only): the resource its protected resource metadata names, as a
server reached through a gateway names its canonical URL, not the one dialled.
``--step-up TOOL=SCOPE``: a call of TOOL also needs SCOPE (`StepUp`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import warnings

import httpx2
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _serve import _LOCAL_ONLY, HOST, SSE_MESSAGE_PATH, SSE_PATH, STREAMABLE_PATH, _run_http  # noqa: E402
from tool_server import ToolServer  # noqa: E402


class IntrospectingVerifier:
    """A bearer token is valid when the authorization server says it is active."""

    def __init__(self, issuer: str) -> None:
        self.introspection = f"{issuer}/introspect"

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = (await http.post(self.introspection, data={"token": token})).json()
        if not answer.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=answer["client_id"],
            scopes=answer["scope"].split(),
            expires_at=answer.get("exp"),
        )


class StepUp:
    """A ``tools/call`` of `tool` also needs `scope`: a token without it is answered 403
    with RFC 6750's challenge naming the scope (``error="insufficient_scope", scope=...``),
    as a server asking for more per operation does. The SDK's own bearer middleware checks
    only the server-wide scopes, and its 403 names no scope."""

    def __init__(self, app: ASGIApp, verifier: IntrospectingVerifier, tool: str, scope: str, metadata: str) -> None:
        self.app, self.verifier, self.tool, self.scope, self.metadata = app, verifier, tool, scope, metadata

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        while not received or received[-1].get("more_body", False):
            received.append(await receive())
        if await self._lacks_scope(scope, b"".join(message.get("body", b"") for message in received)):
            challenge = f'Bearer error="insufficient_scope", scope="{self.scope}", resource_metadata="{self.metadata}"'
            headers = [(b"www-authenticate", challenge.encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replay, send)

    async def _lacks_scope(self, scope: Scope, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        if (message.get("params") or {}).get("name") != self.tool:
            return False
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode()
        if not authorization.startswith("Bearer "):
            return False  # the server's own 401
        token = await self.verifier.verify_token(authorization[len("Bearer "):])
        return token is not None and self.scope not in token.scopes


def _sse_app(server: ToolServer, settings: AuthSettings, verifier: IntrospectingVerifier, resource: str) -> Starlette:
    sse = SseServerTransport(SSE_MESSAGE_PATH, security_settings=_LOCAL_ONLY)

    class SseEndpoint:
        async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
            async with sse.connect_sse(scope, receive, send) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

    assert settings.resource_server_url is not None
    scopes = settings.required_scopes or []
    metadata = build_resource_metadata_url(settings.resource_server_url)
    return Starlette(
        routes=[
            Route(SSE_PATH, endpoint=RequireAuthMiddleware(SseEndpoint(), scopes, metadata), methods=["GET"]),
            Mount(SSE_MESSAGE_PATH, app=RequireAuthMiddleware(sse.handle_post_message, scopes, metadata)),
            *create_protected_resource_routes(resource, [settings.issuer_url], scopes),
        ],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--scope", default="tools")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transport", choices=("streamable", "sse"), default="streamable")
    parser.add_argument("--resource", default=None)
    parser.add_argument("--step-up", default=None, metavar="TOOL=SCOPE")
    args = parser.parse_args()
    port = args.port or _free_port()  # the resource URL names the port before the bind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # validate_token_resource's 3.0 notice
        settings = AuthSettings(
            issuer_url=args.issuer,
            resource_server_url=f"http://{HOST}:{port}{SSE_PATH if args.transport == 'sse' else STREAMABLE_PATH}",
            required_scopes=[args.scope],
            validate_token_resource=False,
        )
    server = ToolServer("oauth-protected", "", 0)
    verifier = IntrospectingVerifier(args.issuer)
    app: ASGIApp
    if args.transport == "sse":
        app = _sse_app(server, settings, verifier, args.resource or str(settings.resource_server_url))
    else:
        app = server.streamable_http_app(
            streamable_http_path=STREAMABLE_PATH,
            host=HOST,
            auth=settings,
            token_verifier=verifier,
        )
    if args.step_up:
        tool, scope = args.step_up.split("=", 1)
        assert settings.resource_server_url is not None
        app = StepUp(app, verifier, tool, scope, str(build_resource_metadata_url(settings.resource_server_url)))
    _run_http(app, port)


if __name__ == "__main__":
    main()
