"""A stdio MCP server with many Finder documents whose Level 1 reads are slow, for the
tests of the background warm-up of the Computer's catalogue.

    python slow_catalogue_server.py --host-id H --documents N --read-delay SECONDS
                                    [--subscribe-delay SECONDS]

Why not ``resource_server.py``: its reads cost whatever parsing its state file costs;
here every read takes `read-delay` seconds and every subscription `subscribe-delay`
(requests run concurrently, as MCP requests do), so the tests know how long a cold
catalogue takes at least.

Resources: ``dpe://H/doc-NNN`` (Level 1, JSON `DPEDocument`, title ``Document NNN``).
Declares ``resources.subscribe`` (low-level `Server`, docs/ARCHITECTURE.md, Library facts) and counts subscriptions.

Tools:
    rename(uri, title)  -> waits until a read of `uri` is under way (at most 10 s),
                           renames the document and sends ``resources/updated`` while
                           that read (which took the old title) is still to answer:
                           a change racing a read, on purpose
    reads(uri)          -> how many times `uri` was read, and how many URIs were
                           subscribed to, as ``"<reads> <subscriptions>"``
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

Ctx = ServerRequestContext[Any, Any]
RESOURCE_NOT_FOUND = -32002

TOOLS = [
    types.Tool(
        name="rename",
        description="Rename a document while a read of it is under way; sends resources/updated.",
        input_schema={
            "type": "object",
            "properties": {"uri": {"type": "string"}, "title": {"type": "string"}},
            "required": ["uri", "title"],
        },
    ),
    types.Tool(
        name="reads",
        description="How often a URI was read, and how many URIs were subscribed to.",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
    ),
]


class SlowCatalogueServer(Server[Any]):
    def __init__(self, host: str, count: int, read_delay: float, subscribe_delay: float) -> None:
        super().__init__(
            "slow_catalogue_server",
            version="1.0",
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,  # registering it declares resources.subscribe
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.read_delay = read_delay
        self.subscribe_delay = subscribe_delay
        self.docs = {f"dpe://{host}/doc-{i:03d}": _document(host, i) for i in range(count)}
        self.read_counts = {uri: 0 for uri in self.docs}
        self.reading: dict[str, anyio.Event] = {}
        self.subscribed: set[str] = set()

    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = [types.Resource(uri=uri, name=doc["title"]) for uri, doc in self.docs.items()]
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in self.docs:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")
        text = json.dumps(self.docs[uri])  # what the document is when the read starts
        self.read_counts[uri] += 1
        self.reading.setdefault(uri, anyio.Event()).set()
        await anyio.sleep(self.read_delay)
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        return types.ReadResourceResult(contents=[contents])

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        await anyio.sleep(self.subscribe_delay)
        self.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def _list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        uri = str(args.get("uri"))
        if uri not in self.docs:
            return _text(f"unknown uri {uri!r}", is_error=True)
        if params.name == "reads":
            return _text(f"{self.read_counts[uri]} {len(self.subscribed)}")
        if params.name != "rename":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        with anyio.move_on_after(10):
            await self.reading.setdefault(uri, anyio.Event()).wait()
        self.docs[uri] = {**self.docs[uri], "title": str(args["title"])}
        notice = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        await ctx.session.send_notification(notice, related_request_id=ctx.request_id)
        return _text(f"renamed after {self.read_counts[uri]} read(s)")


def _document(host: str, index: int) -> dict[str, Any]:
    ref = f"doc-{index:03d}"
    return {
        "doc_ref": ref,
        "uri": f"dpe://{host}/{ref}",
        "file_uri": f"file:///catalogue/{ref}.md",
        "file_type": "md",
        "title": f"Document {index:03d}",
        "page_count": 1,
        "last_modified": f"2026-01-01T00:{index // 60 % 60:02d}:{index % 60:02d}Z",
    }


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


async def serve(server: SlowCatalogueServer) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host-id", required=True)
    parser.add_argument("--documents", type=int, required=True)
    parser.add_argument("--read-delay", type=float, required=True, metavar="SECONDS")
    parser.add_argument("--subscribe-delay", type=float, default=0.0, metavar="SECONDS")
    args = parser.parse_args()
    anyio.run(serve, SlowCatalogueServer(args.host_id, args.documents, args.read_delay, args.subscribe_delay))


if __name__ == "__main__":
    main()
