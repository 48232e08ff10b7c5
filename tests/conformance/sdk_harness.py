"""The reference client for the conformance suite: the plain `mcp` SDK client
(`ClientSession` over its streamable HTTP transport, its OAuth providers), doing per
scenario what harness.py has our Computer do. A scenario it fails is not ours to pass
(test_conformance.py skips it for our Computer, saying so).

Run by the suite as ``python sdk_harness.py SERVER_URL`` (scenario.py says what it gets).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

sys.path.insert(0, str(Path(__file__).parent))
import scenario  # noqa: E402  (run as a script: its folder is not a package here)


class Storage:
    """The SDK's TokenStorage, in memory for the one run."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def authorization_code(url: str, context: dict[str, Any]) -> httpx2.Auth:
    redirects: list[str] = []

    async def redirect(authorization_url: str) -> None:
        redirects.append(await anyio.to_thread.run_sync(scenario.user_grants, authorization_url))

    async def callback() -> AuthorizationCodeResult:
        code, state = scenario.code_and_state(redirects.pop())
        return AuthorizationCodeResult(code=code, state=state)

    preregistered = None
    if "client_id" in context:
        preregistered = OAuthClientInformationFull(
            client_id=context["client_id"], client_secret=context.get("client_secret"),
            redirect_uris=[scenario.REDIRECT_URI],
            token_endpoint_auth_method="client_secret_basic" if context.get("client_secret") else "none",
        )  # fmt: skip
    metadata = OAuthClientMetadata(client_name="conformance sdk harness", redirect_uris=[scenario.REDIRECT_URI])
    return OAuthClientProvider(
        url, metadata, Storage(preregistered), redirect, callback, client_metadata_url=scenario.CLIENT_METADATA_URL
    )


def auth_for(name: str, url: str, context: dict[str, Any]) -> httpx2.Auth | None:
    if not name.startswith("auth/"):
        return None
    if name == "auth/client-credentials-basic":
        return ClientCredentialsOAuthProvider(url, Storage(), context["client_id"], context["client_secret"])
    if name == "auth/client-credentials-jwt":
        signing = SignedJWTParameters(
            issuer=context["client_id"], subject=context["client_id"],
            signing_algorithm=context.get("signing_algorithm", "ES256"), signing_key=context["private_key_pem"],
        )  # fmt: skip
        return PrivateKeyJWTOAuthProvider(url, Storage(), context["client_id"], signing.create_assertion_provider())
    if name == "auth/cross-app-access-complete-flow":

        async def assertion(audience: str, resource: str) -> str:
            return await anyio.to_thread.run_sync(scenario.identity_assertion, context, audience, resource)

        issuer = scenario.authorization_server(url)
        return IdentityAssertionOAuthProvider(
            url, Storage(), context["client_id"], context["client_secret"], issuer, assertion,
            token_endpoint_auth_method="client_secret_basic",
        )  # fmt: skip
    return authorization_code(url, context)


async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    if isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="accept", content=scenario.schema_defaults(params.requested_schema))
    return types.ElicitResult(action="decline")


async def main() -> None:
    name, url, context = scenario.scenario()
    async with httpx2.AsyncClient(auth=auth_for(name, url, context), timeout=20) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                await session.list_tools()
                call = scenario.tool_call(name)
                if call is not None:
                    result = await session.call_tool(*call)
                    print("called", call[0], "error" if result.is_error else "ok")


def run() -> int:
    """The whole run, for forkserver.py: an exception is the client failing (exit 1)."""
    anyio.run(main)
    return 0


if __name__ == "__main__":
    sys.exit(run())
