"""A stdio MCP server with many Finder documents, for the finder, storm and updates benchmarks.

    python doc_server.py --host-id lib0.bench --documents 1000 [--tools]

Why not the tests' ``resource_server.py``: that one re-reads a JSON state file on every
request, so 10 × 1,000 Level 1 reads would time the file parsing. Here the documents are
generated once, in memory, and a read is a dictionary lookup: what is measured is the
Computer's side.

Resources: ``dpe://<host-id>/doc-NNNN`` (Level 1, JSON `DPEDocument`), listed in one page.
Every 50th document has the keyword ``quarterly`` (the keyword benchmark's needle);
``last_modified`` differs per document, so the Finder's sort has work to do. Declares
``resources.subscribe`` and ``resources.listChanged`` (low-level `Server`, docs/ARCHITECTURE.md, Library facts).

Tools (with ``--tools`` only, so that ten servers of one Computer do not offer ten tools
of the same name); notices go to the one stdio connection whether or not it subscribed:

* ``storm(uri, count, seconds, final_title)`` sends `count` ``resources/updated`` for
  `uri`, evenly spread over `seconds`, and renames the document to `final_title` just
  before the last one, so the final state is visible only once the last notice is
  handled;
* ``churn(count, seconds, tag)`` makes `count` single-document updates evenly spread over
  `seconds`: the i-th renames document i (modulo the documents) to ``"<tag> <i>"`` and
  sends one ``resources/updated`` for it, so a catalogue that keeps up shows every
  renamed document under the keyword `tag`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

Ctx = ServerRequestContext[Any, Any]
RESOURCE_NOT_FOUND = -32002
KEYWORD_EVERY = 50
FILE_TYPES = ("md", "pdf", "csv", "docx")

STORM_TOOL = types.Tool(
    name="storm",
    description="Send count resources/updated for uri over seconds; rename it to final_title before the last.",
    input_schema={
        "type": "object",
        "properties": {
            "uri": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "seconds": {"type": "number", "minimum": 0},
            "final_title": {"type": "string"},
        },
        "required": ["uri", "count", "seconds", "final_title"],
    },
)
CHURN_TOOL = types.Tool(
    name="churn",
    description="Rename count documents in turn to '<tag> <i>' over seconds, one resources/updated each.",
    input_schema={
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1},
            "seconds": {"type": "number", "minimum": 0},
            "tag": {"type": "string"},
        },
        "required": ["count", "seconds", "tag"],
    },
)


def documents(host: str, count: int) -> dict[str, dict[str, Any]]:
    """Level 1 answers by URI, deterministic."""
    docs = {}
    for index in range(count):
        doc_ref = f"doc-{index:04d}"
        uri = f"dpe://{host}/{doc_ref}"
        keywords = ["report", f"topic-{index % 7}"] + (["quarterly"] if index % KEYWORD_EVERY == 0 else [])
        docs[uri] = {
            "doc_ref": doc_ref,
            "uri": uri,
            "file_uri": f"file:///bench/{host}/{doc_ref}.{FILE_TYPES[index % len(FILE_TYPES)]}",
            "file_type": FILE_TYPES[index % len(FILE_TYPES)],
            "title": f"Document {index} of {host}",
            "page_count": 1 + index % 40,
            "keywords": keywords,
            "summary": f"Benchmark document {index}: figures, tables and notes on topic {index % 7}.",
            "last_modified": f"2026-{1 + index % 12:02d}-{1 + index % 28:02d}T{index % 24:02d}:00:00Z",
        }
    return docs


class DocServer(Server[Any]):
    def __init__(self, host: str, count: int, tools: bool) -> None:
        super().__init__(
            f"doc_server[{host}]",
            version="1.0",
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,  # registering it declares resources.subscribe
            on_unsubscribe_resource=self._unsubscribe,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.docs = documents(host, count)
        self.tools = [STORM_TOOL, CHURN_TOOL] if tools else []

    def create_initialization_options(self, notification_options=None, *args: Any, **kwargs: Any):  # type: ignore[override]
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), *args, **kwargs
        )

    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = [
            types.Resource(uri=uri, name=doc["title"], mime_type="application/json") for uri, doc in self.docs.items()
        ]
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        doc = self.docs.get(str(params.uri))
        if doc is None:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {params.uri}")
        text = json.dumps(doc)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="application/json", text=text)]
        )

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    async def _list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in {tool.name for tool in self.tools}:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = dict(params.arguments or {})
        if params.name == "churn":
            return await self._churn(ctx, int(args["count"]), float(args["seconds"]), str(args["tag"]))
        uri = str(args.get("uri"))
        if uri not in self.docs:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown uri {uri!r}")], is_error=True)
        final_title = str(args["final_title"])

        def change(index: int, count: int) -> str:
            if index == count - 1:
                self.docs[uri] = {**self.docs[uri], "title": final_title}
            return uri

        return await self._paced(ctx, int(args["count"]), float(args["seconds"]), change)

    async def _churn(self, ctx: Ctx, count: int, seconds: float, tag: str) -> types.CallToolResult:
        uris = list(self.docs)
        if not uris:
            return types.CallToolResult(content=[types.TextContent(text="no documents")], is_error=True)

        def change(index: int, count: int) -> str:
            uri = uris[index % len(uris)]
            self.docs[uri] = {**self.docs[uri], "title": f"{tag} {index}"}
            return uri

        return await self._paced(ctx, count, seconds, change)

    async def _paced(
        self, ctx: Ctx, count: int, seconds: float, change: Callable[[int, int], str]
    ) -> types.CallToolResult:
        """`count` times, evenly spread over `seconds`: `change(index, count)` (returns the
        URI it changed), then one ``resources/updated`` for that URI."""
        started = time.monotonic()
        for index in range(count):
            await anyio.sleep(max(0.0, started + seconds * index / count - time.monotonic()))
            uri = change(index, count)
            notice = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
            await ctx.session.send_notification(notice, related_request_id=ctx.request_id)
        elapsed = time.monotonic() - started
        return types.CallToolResult(content=[types.TextContent(text=f"{count} updated in {elapsed:.3f} s")])


async def serve(server: DocServer) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host-id", required=True, help="the dpe:// host of this server's documents")
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--tools", action="store_true", help="offer the storm and churn tools")
    args = parser.parse_args()
    anyio.run(serve, DocServer(args.host_id, args.documents, args.tools))


if __name__ == "__main__":
    main()
