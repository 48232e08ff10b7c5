"""The test tool server over streamable HTTP or SSE as an OAuth-protected resource, built from the
`mcp` SDK's server auth support: its bearer middleware, protected resource metadata, and
a token verifier asking the authorization server (RFC 7662 introspection), so that a token
revoked there is refused here at once.

    python oauth_server.py --issuer http://127.0.0.1:<as-port> [--scope tools] [--transport streamable|sse]
        [--port 0] [--resource https://mcp.example.test/sse]

Prints ``PORT=<n>`` once serving (``_serve``); the MCP endpoint is ``/mcp`` (SSE: ``/sse``,
wired here as the SDK wires its streamable app: the SDK has no SSE app with auth).
``--resource`` (SSE only): the resource its protected resource metadata names, as a
server reached through a gateway names its canonical URL, not the one dialled.
"""

from __future__ import annotations

import argparse
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
    if args.transport == "sse":
        _run_http(_sse_app(server, settings, verifier, args.resource or str(settings.resource_server_url)), port)
        return
    app = server.streamable_http_app(
        streamable_http_path=STREAMABLE_PATH,
        host=HOST,
        auth=settings,
        token_verifier=verifier,
    )
    _run_http(app, port)


if __name__ == "__main__":
    main()
