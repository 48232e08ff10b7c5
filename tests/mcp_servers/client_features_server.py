"""An MCP server that asks things of its client (stdio), run as a child process by the
tests of the Computer's client features (docs/computer/mcp-client.md).

Why it exists: elicitation, sampling and roots are requests from the server to the
client, answered while a tool call waits; only a real server shows what the Computer
announced and what its answers look like on the server's side.

    python client_features_server.py

Tools; each answers JSON text of what the client answered, or of its refusal
(``{"error": message, "code": code}``):

    ask_form(message)    -> elicitation/create, form mode: name (string, default "Ada"),
                            age (integer, default 36), newsletter (boolean) -> {"action", "content"}
    ask_url(url)         -> elicitation/create, URL mode -> {"action"}
    sample(prompt)       -> sampling/createMessage (system prompt "Answer briefly.", 50
                            tokens) -> {"model", "text", "stopReason"}
    list_roots()         -> roots/list -> [{"uri", "name"}]
    capabilities()       -> the capabilities the client announced at initialize
    roots_notices()      -> {"notices": n, "roots": [...], "errors": [...]}: the
                            notifications/roots/list_changed received, the roots the server
                            listed again after the last one, and why listing them failed
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _serve import run  # noqa: E402

Ctx = ServerRequestContext[Any, Any]

#: The form asked for by ask_form.
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "default": 36},
        "newsletter": {"type": "boolean", "description": "Subscribe?"},
    },
    "required": ["name"],
}


def _schema(**props: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": kind} for name, kind in props.items()}}


def _json(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(value, sort_keys=True))])


class ClientFeaturesServer(Server[Any]):
    def __init__(self) -> None:
        super().__init__(
            "client_features",
            version="1.0",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_roots_list_changed=self._roots_changed,
        )
        self.notices = 0
        self.relisted: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.tools = {
            "ask_form": _schema(message="string"),
            "ask_url": _schema(url="string"),
            "sample": _schema(prompt="string"),
            "list_roots": _schema(),
            "capabilities": _schema(),
            "roots_notices": _schema(),
        }

    async def _list_tools(self, ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=s) for n, s in self.tools.items()])

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        session = ctx.session
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # sampling and roots, after 2025-11-25
                if params.name == "ask_form":
                    answer = await session.elicit_form(arguments["message"], FORM, related_request_id=ctx.request_id)
                    return _json(answer.model_dump(mode="json", exclude_none=True))
                if params.name == "ask_url":
                    answer = await session.elicit_url(
                        "Sign in to continue", arguments["url"], "elicit-1", related_request_id=ctx.request_id
                    )
                    return _json({"action": answer.action})
                if params.name == "sample":
                    message = types.SamplingMessage(role="user", content=types.TextContent(text=arguments["prompt"]))
                    sampled = await session.create_message(
                        [message], max_tokens=50, system_prompt="Answer briefly.", related_request_id=ctx.request_id
                    )
                    text = sampled.content.text if isinstance(sampled.content, types.TextContent) else None
                    return _json({"model": sampled.model, "text": text, "stopReason": sampled.stop_reason})
                if params.name == "list_roots":
                    return _json(await self._roots(ctx))
                if params.name == "capabilities":
                    capabilities = session.client_capabilities
                    return _json(capabilities.model_dump(mode="json", by_alias=True, exclude_none=True) if capabilities else None)
                if params.name == "roots_notices":
                    return _json({"notices": self.notices, "roots": self.relisted, "errors": self.errors})
        except MCPError as exc:
            return _json({"error": exc.message, "code": exc.code})
        raise MCPError(code=types.METHOD_NOT_FOUND, message=f"unknown tool {params.name!r}")

    async def _roots_changed(self, ctx: Ctx, params: Any) -> None:
        """A server that works in its client's roots lists them again when told they changed."""
        self.notices += 1
        with anyio.fail_after(10):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                try:
                    self.relisted = await self._roots(ctx)
                except MCPError as exc:
                    self.errors.append(exc.message)

    @staticmethod
    async def _roots(ctx: Ctx) -> list[dict[str, Any]]:
        listed = await ctx.session.list_roots()
        return [root.model_dump(mode="json", exclude_none=True) for root in listed.roots]


if __name__ == "__main__":
    run(ClientFeaturesServer(), "stdio")
