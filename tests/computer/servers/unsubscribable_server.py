"""A stdio MCP server with resources but neither `resources.subscribe` nor `listChanged`,
like the servers ``MCPServer`` / FastMCP make by default.

Why: the Computer subscribes only where `resources.subscribe` is declared (docs/ARCHITECTURE.md, Wire decisions),
and may cache only what it hears changes about; its tests need such a server.

    python unsubscribable_server.py --state PATH

Serves the entries of a `tests/mcp_servers/resource_server.py` state file (same format,
re-read on every request); no tools, no notifications. A subscribe request would be
refused (method not found).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "mcp_servers"))
from resource_server import RESOURCE_NOT_FOUND, load_state  # noqa: E402

Ctx = ServerRequestContext[Any, Any]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True)
    state_path = os.path.abspath(parser.parse_args().state)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        entries = [e for e in load_state(state_path)["resources"] if e.get("listed", True)]
        return types.ListResourcesResult(resources=[types.Resource(uri=e["uri"], name=e["name"]) for e in entries])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        for e in load_state(state_path)["resources"]:
            if e["uri"] == params.uri:
                text = json.dumps(e["json"]) if "json" in e else str(e.get("text", ""))
                return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=text)])
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {params.uri}")

    server = Server("unsubscribable", version="1.0", on_list_resources=list_resources, on_read_resource=read_resource)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
