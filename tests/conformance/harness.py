"""Our Computer as the client under test of the MCP conformance suite, through its
public API only: the scenario's server configured as a streamable HTTP MCP server (with
the `oauth` mode the scenario needs, its secrets as inputs), `ClientFeatures` answering
a form elicitation with the schema's defaults and a scope step-up as the user would,
`authorize()` where the mode needs a user, then the tools listed and the scenario's
tool called. Exits 1 when the call fails (the suite judges the rest). `run()` is the
whole run, for forkserver.py.

Run by the suite as ``python harness.py SERVER_URL`` (scenario.py says what it gets);
sdk_harness.py does the same with the plain `mcp` SDK client.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from smcp_sync.computer import (
    ClientFeatures,
    Computer,
    ElicitationAnswer,
    FormElicitation,
    IdentityAssertionRequest,
    Inputs,
    MemoryTokenStore,
    UrlElicitation,
    allow_all,
)

sys.path.insert(0, str(Path(__file__).parent))
import scenario  # noqa: E402  (run as a script: its folder is not a package here)

SERVER = "conformance"
SECRET = {"id": "secret", "type": "promptString", "description": "the scenario's secret or key", "password": True}


def oauth_mode(name: str, url: str, context: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The config's `oauth.mode` for the scenario, and the secret input's value."""
    if not name.startswith("auth/"):
        return None, {}
    secret = {"clientSecretInput": "secret"} if context.get("client_secret") else {}
    values = {"secret": context["client_secret"]} if secret else {}
    if name == "auth/client-credentials-basic":
        return {"type": "clientCredentialsSecret", "clientId": context["client_id"], **secret}, values
    if name == "auth/client-credentials-jwt":
        algorithm = context.get("signing_algorithm", "ES256")
        mode = {"type": "clientCredentialsPrivateKeyJwt", "clientId": context["client_id"], "privateKeyInput": "secret"}
        return {**mode, "algorithm": algorithm}, {"secret": context["private_key_pem"]}
    if name == "auth/cross-app-access-complete-flow":
        issuer = scenario.authorization_server(url)
        mode = {"type": "identityAssertion", "clientId": context["client_id"], "issuer": issuer, **secret}
        return {**mode, "tokenEndpointAuthMethod": "client_secret_basic"}, values
    code = {"type": "authorizationCode"}
    if "client_id" in context:
        return {**code, "registration": "preregistered", "clientId": context["client_id"], **secret}, values
    return {**code, "registration": "clientMetadataDocument", "url": scenario.CLIENT_METADATA_URL}, {}


def elicit(request: FormElicitation | UrlElicitation) -> ElicitationAnswer:
    if isinstance(request, FormElicitation):
        return ElicitationAnswer.accept(request.defaults)
    return ElicitationAnswer.decline()


def run() -> int:
    name, url, context = scenario.scenario()
    mode, values = oauth_mode(name, url, context)
    config: dict[str, Any] = {"name": SERVER, "type": "streamable", "server_parameters": {"url": url}}
    if mode is not None:
        config["oauth"] = {"mode": mode}

    def assertion(request: IdentityAssertionRequest) -> str:
        return scenario.identity_assertion(context, request.audience, request.resource)

    features = ClientFeatures(
        elicit=elicit, open_url=scenario.user_grants, redirect_uri=scenario.REDIRECT_URI, identity_assertion=assertion
    )
    computer = Computer(
        "conformance", [config], inputs=Inputs([SECRET] if values else [], values=values), confirm=allow_all,
        oauth_store=MemoryTokenStore(), client_features=features,
    )  # fmt: skip
    with computer:
        computer.start(timeout=20)
        if mode is not None and mode["type"] == "authorizationCode":
            computer.authorize(SERVER, scenario.user_grants, timeout=20, redirect_uri=scenario.REDIRECT_URI)
        print("tools:", [tool.name for tool in computer.tools()])
        call = scenario.tool_call(name)
        if call is not None:
            result = computer.call_tool(f"{SERVER}__{call[0]}", call[1], timeout=20)
            print("called", call[0], "error" if result.is_error else "ok", result.text)
            return 1 if result.is_error else 0
    return 0


if __name__ == "__main__":
    sys.exit(run())
