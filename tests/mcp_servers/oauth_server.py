"""The test tool server over streamable HTTP as an OAuth-protected resource, built from the
`mcp` SDK's server auth support: its bearer middleware, protected resource metadata, and
a token verifier asking the authorization server (RFC 7662 introspection), so that a token
revoked there is refused here at once.

    python oauth_server.py --issuer http://127.0.0.1:<as-port> [--scope tools] [--transport streamable] [--port 0]

Prints ``PORT=<n>`` once serving (``_serve``); the MCP endpoint is ``/mcp``.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import warnings

import httpx2
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _serve import HOST, STREAMABLE_PATH, _run_http  # noqa: E402
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--scope", default="tools")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transport", choices=("streamable",), default="streamable")
    args = parser.parse_args()
    port = args.port or _free_port()  # the resource URL names the port before the bind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # validate_token_resource's 3.0 notice
        settings = AuthSettings(
            issuer_url=args.issuer,
            resource_server_url=f"http://{HOST}:{port}{STREAMABLE_PATH}",
            required_scopes=[args.scope],
            validate_token_resource=False,
        )
    server = ToolServer("oauth-protected", "", 0)
    app = server.streamable_http_app(
        streamable_http_path=STREAMABLE_PATH,
        host=HOST,
        auth=settings,
        token_verifier=IntrospectingVerifier(args.issuer),
    )
    _run_http(app, port)


if __name__ == "__main__":
    main()
