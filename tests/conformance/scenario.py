"""What a client scenario of the MCP conformance suite (`@modelcontextprotocol/conformance`)
hands the client under test, and what both harnesses (harness.py: our Computer;
sdk_harness.py: the plain `mcp` SDK client) do alike with it.

The suite starts the scenario's servers, runs the harness with the MCP server's URL as
its last argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and its data
(pre-registered client credentials, a signing key, an identity provider) as JSON in
``MCP_CONFORMANCE_CONTEXT``, then judges what the servers saw. Standard library and
httpx2 (the `mcp` SDK's HTTP client) only, so that both harnesses load it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2

#: The tool each scenario's server expects to be called, with its arguments; `initialize`
#: only lists. Every `auth/*` server has `test-tool`.
TOOL_CALLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}
AUTH_TOOL = ("test-tool", {})
#: The redirect a host receives itself (the suite's authorization server redirects to any).
REDIRECT_URI = "http://localhost:3000/callback"
#: The client ID metadata document URL the suite's CIMD scenario expects (it never fetches it).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def scenario() -> tuple[str, str, dict[str, Any]]:
    """(the scenario's name, the MCP server's URL, its context) as the suite passes them."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return os.environ["MCP_CONFORMANCE_SCENARIO"], sys.argv[-1], context


def tool_call(name: str) -> tuple[str, dict[str, Any]] | None:
    return TOOL_CALLS[name] if name in TOOL_CALLS else AUTH_TOOL


def schema_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The defaults of a form elicitation's schema by field (the scenario accepts them)."""
    return {field: spec["default"] for field, spec in schema.get("properties", {}).items() if "default" in spec}


def user_grants(authorization_url: str) -> str:
    """The user at a browser: the suite's authorization server grants at once and
    redirects; the host receives the redirect itself, so stop there and return it."""
    answer = httpx2.get(authorization_url, follow_redirects=False, timeout=10)
    if answer.status_code not in (301, 302, 303, 307, 308):
        raise RuntimeError(f"the authorization server answered {answer.status_code}, not a redirect")
    return answer.headers["location"]


def code_and_state(redirect: str) -> tuple[str, str | None]:
    query = parse_qs(urlsplit(redirect).query)
    return query["code"][0], query.get("state", [None])[0]


def authorization_server(server_url: str) -> str:
    """The MCP server's authorization server, from its protected resource metadata: what
    a cross-app host is configured with (the SEP-990 mode never discovers it itself)."""
    parts = urlsplit(server_url)
    metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    found: str = httpx2.get(metadata, timeout=10).raise_for_status().json()["authorization_servers"][0]
    return found


def identity_assertion(context: dict[str, Any], audience: str, resource: str) -> str:
    """The ID-JAG for `audience` and `resource`, from the scenario's identity provider
    (an RFC 8693 token exchange of the user's ID token): the enterprise's side of SEP-990."""
    form = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": ID_JAG,
        "audience": audience,
        "resource": resource,
        "subject_token": context["idp_id_token"],
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": context["idp_client_id"],
    }
    answer = httpx2.post(context["idp_token_endpoint"], data=form, timeout=10).raise_for_status()
    assertion: str = answer.json()["access_token"]
    return assertion
