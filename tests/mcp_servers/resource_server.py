"""An MCP *resource* server driven by a JSON state file, for Desktop and Finder tests.

Why it exists: the Computer enumerates ``window://`` (Desktop) and ``dpe://`` (Finder)
resources of servers that declare ``resources.subscribe``, subscribes to them and
reacts to ``resources/list_changed`` and ``resources/updated``.  Its tests need a real
server whose resources they can change at will and whose notifications they trigger.

Built on the low-level ``Server`` because ``MCPServer`` declares
``resources.subscribe = False``.  This one declares ``resources.subscribe = True`` and
``resources.listChanged = True`` (tools are served too, ``tools.listChanged`` false).

Command line::

    python resource_server.py --state PATH [--transport stdio|sse|streamable] [--port 0]
                              [--page-size N] [--always-notify-updated] [--name NAME]

    --state PATH             JSON state file, re-read on every request (tests may edit it;
                             write it atomically, e.g. with tests.mcp_servers.write_state)
    --page-size N            resources/list returns N per page with a nextCursor
    --always-notify-updated  send resources/updated even for URIs nobody subscribed to
    --name NAME              serverInfo.name (default "resource_server")

HTTP transports print ``PORT=<n>`` once listening; URLs ``http://127.0.0.1:<n>/sse``
(SSE) and ``http://127.0.0.1:<n>/mcp`` (streamable HTTP).  See ``_serve.py``.

State file: ``{"resources": [entry, ...], "templates": [template, ...]}`` or just the
list of entries; a missing file means no resources.  An entry is
``{"uri", "name", "mimeType"?, "description"?, "annotations"?, "_meta"?, "text"?, "json"?,
"listed"?, "error"?}`` (`annotations` and `_meta` are listed as given):
``resources/read`` returns ``text``, or ``json.dumps(json)`` with mimeType
``application/json`` by default; ``"listed": false`` makes it readable but absent from
``resources/list`` (Finder pages/elements); ``"error": {"code", "message", "data"?}``
makes reading it answer that JSON-RPC error instead (a Finder server's 4201–4204).  Listing
keys of the state: ``"list_delay": seconds`` makes each ``resources/list`` page take that
long, ``"list_failures": n`` makes the next n pages fail (the count goes down in the
file); each page asked for adds a line to ``PATH.lists``.  A template is
``{"uriTemplate", "name", "description"?, "mimeType"?}`` (``resources/templates/list``).
Reading an unknown URI is an MCP error (code -32002) whose message contains "not found".

Tools and the notifications they send (to every connection; request-scoped for the
caller, see ``_peers.py``):

    set_resources(resources: list) -> replaces the entries in the state file,
                                      sends notifications/resources/list_changed
    touch(uri, text?)              -> sets the entry's text if given (isError for an unknown
                                      uri), sends notifications/resources/updated
    burst(n, uri)                  -> sends n notifications/resources/updated for uri, as
                                      fast as possible

``resources/updated`` only goes to connections subscribed to that URI (MCP spec), unless
``--always-notify-updated``.  Tool results say how many connections were notified.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _peers import Peers  # noqa: E402
from _serve import add_transport_arguments, run  # noqa: E402

Ctx = ServerRequestContext[Any, Any]
RESOURCE_NOT_FOUND = -32002  # the code the MCP spec gives for an unknown resource


def load_state(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        data = {}
    if isinstance(data, list):
        data = {"resources": data}
    data.setdefault("resources", [])
    data.setdefault("templates", [])
    return data


def save_state(path: str, state: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": required}
    return types.Tool(name=name, description=description, input_schema=schema)


TOOLS = [
    _tool("set_resources", "Replace the resource entries; sends resources/list_changed.",
          {"resources": {"type": "array", "items": {"type": "object"}}}, ["resources"]),
    _tool("touch", "Optionally set a resource's text; sends resources/updated.",
          {"uri": {"type": "string"}, "text": {"type": "string"}}, ["uri"]),
    _tool("burst", "Send n resources/updated notifications for uri as fast as possible.",
          {"n": {"type": "integer"}, "uri": {"type": "string"}}, ["n", "uri"]),
]


class ResourceServer(Server[Any]):
    def __init__(self, name: str, state_path: str, page_size: int, always_notify_updated: bool) -> None:
        super().__init__(
            name,
            version="1.0",
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,  # registering it declares resources.subscribe
            on_unsubscribe_resource=self._unsubscribe,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.state_path = state_path
        self.page_size = page_size
        self.always_notify_updated = always_notify_updated
        self.peers = Peers()

    def create_initialization_options(self, notification_options=None, *args: Any, **kwargs: Any):  # type: ignore[override]
        # Overridden because the streamable-HTTP session manager calls it without arguments.
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), *args, **kwargs
        )

    # -- resources ---------------------------------------------------------------------

    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        self.peers.seen(ctx)
        state = load_state(self.state_path)
        with open(f"{self.state_path}.lists", "a", encoding="utf-8") as log:
            log.write("list\n")
        failing = state.get("list_failures", 0) > 0
        if failing:
            state["list_failures"] -= 1
            save_state(self.state_path, state)
        await anyio.sleep(float(state.get("list_delay", 0)))
        if failing:
            raise MCPError(code=types.INTERNAL_ERROR, message="resources/list fails on purpose (list_failures)")
        entries = [e for e in state["resources"] if e.get("listed", True)]
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size if self.page_size > 0 else len(entries)
        next_cursor = str(end) if end < len(entries) else None
        resources = [
            types.Resource(
                uri=e["uri"], name=e.get("name", e["uri"]), description=e.get("description"),
                mime_type=_mime_type(e), annotations=e.get("annotations"), meta=e.get("_meta"),
            )
            for e in entries[start:end]
        ]
        return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def _list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [
            types.ResourceTemplate(
                uri_template=t["uriTemplate"], name=t.get("name", t["uriTemplate"]),
                description=t.get("description"), mime_type=t.get("mimeType"),
            )
            for t in load_state(self.state_path)["templates"]
        ]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        self.peers.seen(ctx)
        for e in load_state(self.state_path)["resources"]:
            if e["uri"] == params.uri and "error" in e:
                raise MCPError(code=e["error"]["code"], message=e["error"]["message"], data=e["error"].get("data"))
            if e["uri"] == params.uri:
                text = json.dumps(e["json"], ensure_ascii=False) if "json" in e else str(e.get("text", ""))
                contents = types.TextResourceContents(uri=params.uri, mime_type=_mime_type(e), text=text)
                return types.ReadResourceResult(contents=[contents])
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {params.uri}", data={"uri": params.uri})

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.peers.subscribe(ctx, params.uri)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.peers.unsubscribe(ctx, params.uri)
        return types.EmptyResult()

    # -- tools -------------------------------------------------------------------------

    async def _list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        try:
            if params.name == "set_resources":
                return await self._set_resources(ctx, list(args["resources"]))
            if params.name == "touch":
                return await self._touch(ctx, str(args["uri"]), args.get("text"))
            if params.name == "burst":
                return await self._burst(ctx, int(args["n"]), str(args["uri"]))
        except (KeyError, TypeError, ValueError) as exc:
            return _text(f"invalid arguments for {params.name}: {exc!r}", is_error=True)
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")

    async def _set_resources(self, ctx: Ctx, resources: list[dict[str, Any]]) -> types.CallToolResult:
        state = load_state(self.state_path)
        state["resources"] = resources
        save_state(self.state_path, state)
        sent = await self.peers.notify(ctx, types.ResourceListChangedNotification())
        return _text(f"{len(resources)} resources; list_changed sent to {sent} connection(s)")

    async def _touch(self, ctx: Ctx, uri: str, text: Any) -> types.CallToolResult:
        state = load_state(self.state_path)
        entry = next((e for e in state["resources"] if e["uri"] == uri), None)
        if entry is None:
            return _text(f"Resource not found: {uri}", is_error=True)
        if text is not None:
            entry["text"] = str(text)
            entry.pop("json", None)
            save_state(self.state_path, state)
        sent = await self._send_updated(ctx, uri)
        return _text(f"updated sent to {sent} connection(s)")

    async def _burst(self, ctx: Ctx, n: int, uri: str) -> types.CallToolResult:
        sent = 0
        for _ in range(n):
            sent += await self._send_updated(ctx, uri)
        return _text(f"{sent} updated notification(s) sent")

    async def _send_updated(self, ctx: Ctx, uri: str) -> int:
        notification = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        return await self.peers.notify(ctx, notification, subscribed_to=None if self.always_notify_updated else uri)


def _mime_type(entry: dict[str, Any]) -> str | None:
    return entry.get("mimeType") or ("application/json" if "json" in entry else None)


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_transport_arguments(parser)
    parser.add_argument("--state", required=True, metavar="PATH")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--always-notify-updated", action="store_true")
    parser.add_argument("--name", default="resource_server")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server = ResourceServer(args.name, os.path.abspath(args.state), args.page_size, args.always_notify_updated)
    run(server, args.transport, args.port)


if __name__ == "__main__":
    main()
