"""A tiny stdio MCP server that answers `completion/complete` (the shared test servers do not).

Completes a resource template's argument from a fixed word list filtered by prefix, and
echoes the context it was given (so a test can see `context.arguments` arrive):

    ref {"type": "ref/resource", "uri": "dpe://docs/{doc_ref}"}, argument doc_ref=<prefix>
      -> values: words starting with <prefix>, total, hasMore false
    any other ref -> MCP error -32602
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

WORDS = ["alpha", "alpine", "beta", "gamma"]


async def complete(ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    if not isinstance(ref, types.ResourceTemplateReference) or ref.uri != "dpe://docs/{doc_ref}":
        raise MCPError(code=types.INVALID_PARAMS, message=f"cannot complete {ref!r}")
    values = [w for w in WORDS if w.startswith(params.argument.value)]
    context = params.context.arguments if params.context is not None else None
    if context:
        values = [f"{v}@{context.get('page', '')}" for v in values]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def main() -> None:
    server = Server("completion_server", version="1.0", on_completion=complete)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
