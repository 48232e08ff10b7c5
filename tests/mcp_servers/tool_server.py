"""A configurable MCP *tool* server, run as a child process by the tests of the Computer.

Why it exists: the Computer aggregates real MCP servers; its tests need one whose every
behaviour (results, tool errors, slowness, cancellation, crashes, a changing tool list,
big payloads, annotations and ``_meta``) can be triggered on demand, over each transport.

Built on the low-level ``Server`` because ``MCPServer`` cannot declare
``tools.listChanged = True``.  ``create_initialization_options`` is overridden (not just
passed ``NotificationOptions`` once) because the SDK's streamable-HTTP session manager
calls it without arguments.

Command line::

    python tool_server.py [--transport stdio|sse|streamable] [--port 0]
                          [--prefix P] [--name NAME] [--noisy-stderr KB]

    --prefix P         every tool name (also those added at runtime) becomes P + name
    --name NAME        serverInfo.name (default "tool_server")
    --noisy-stderr KB  write KB kilobytes of junk to stderr at startup and on every tool
                       call (proves the parent keeps draining the child's stderr)

HTTP transports print ``PORT=<n>`` once listening; URLs ``http://127.0.0.1:<n>/sse``
(SSE) and ``http://127.0.0.1:<n>/mcp`` (streamable HTTP).  See ``_serve.py``.

Tools (names without prefix):

    echo(text)        -> text; has an outputSchema, structuredContent {"result": text}
    add(a, b)         -> str(a + b); no outputSchema
    fail(message)     -> CallToolResult with isError true and the message as text
    sleep(seconds)    -> sleeps, then "slept <seconds>".  Writes "started <request_id>
                         seconds=<s>" to $SMCP_TEST_STARTED_LOG when it begins and, if it is
                         cancelled (notifications/cancelled, or the connection closing),
                         "cancelled <request_id> seconds=<s>" to $SMCP_TEST_CANCEL_LOG.
                         Both env vars are optional; one line per event, appended.
    crash()           -> the process exits at once with os._exit(3)
    add_tool(name)    -> adds tool <prefix><name> (it answers "<name> called with {...}"),
                         sends notifications/tools/list_changed to every connection
    remove_tool(name) -> removes a tool added by add_tool, sends the same notification;
                         isError if there is no such added tool
    big(size)         -> a text of exactly `size` characters ("0123456789" repeated)
    image(size, seed) -> a caption and an image/png of `size` bytes: random.Random(seed).randbytes(size)
    delete_item(item) -> annotations title="Delete item", readOnlyHint=False,
                         destructiveHint=True, idempotentHint=False, openWorldHint=False
    meta_tool()       -> the tool carries _meta {"example.com/origin": "tool_server",
                         "tags": "server-native"} (a server-owned "tags" key: the A2C
                         namespace must not clash with it)

Notifications sent: ``notifications/tools/list_changed`` (by add_tool / remove_tool).
Note for stdio clients: ``stdio_client`` does not inherit the parent's environment
(only PATH, HOME...); pass SMCP_TEST_* explicitly in ``StdioServerParameters.env``.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import random
import sys
from collections.abc import Awaitable, Callable
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
Handler = Callable[[Ctx, dict[str, Any]], Awaitable["types.CallToolResult | str"]]


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in props.items()},
        "required": list(props),
    }


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


def _append_line(env_var: str, line: str) -> None:
    path = os.environ.get(env_var)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


class ToolServer(Server[Any]):
    def __init__(self, name: str, prefix: str, noisy_kb: int) -> None:
        super().__init__(name, version="1.0", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        self.prefix = prefix
        self.noisy_kb = noisy_kb
        self.peers = Peers()
        self.tools: dict[str, tuple[types.Tool, Handler]] = {}
        self.added: set[str] = set()
        self._register_builtin_tools()

    def create_initialization_options(self, notification_options=None, *args: Any, **kwargs: Any):  # type: ignore[override]
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *args, **kwargs
        )

    # -- registry ---------------------------------------------------------------------

    def _add(self, name: str, handler: Handler, input_schema: dict[str, Any], **tool_fields: Any) -> None:
        full = self.prefix + name
        self.tools[full] = (types.Tool(name=full, input_schema=input_schema, **tool_fields), handler)

    def _register_builtin_tools(self) -> None:
        self._add(
            "echo", self._echo, _schema(text="string"),
            description="Return the text unchanged.",
            output_schema=_schema(result="string"),
        )
        self._add("add", self._add_numbers, _schema(a="integer", b="integer"), description="Add two integers.")
        self._add("fail", self._fail, _schema(message="string"), description="Return a tool error.")
        self._add(
            "sleep", self._sleep, _schema(seconds="number", pad="integer"),
            description="Sleep, observably cancellable; `pad` characters more in the answer.",
        )
        self._add("crash", self._crash, _schema(), description="Kill the server process (exit code 3).")
        self._add("add_tool", self._add_tool, _schema(name="string"), description="Add a tool at runtime.")
        self._add("remove_tool", self._remove_tool, _schema(name="string"), description="Remove an added tool.")
        self._add("big", self._big, _schema(size="integer"), description="Return `size` characters.")
        self._add(
            "image", self._image, _schema(size="integer", seed="integer"),
            description="Return a caption and an image of `size` pseudo-random bytes (`blob_bytes(size, seed)`).",
        )
        self._add(
            "delete_item", self._delete_item, _schema(item="string"),
            description="Pretend to delete an item (annotated as destructive).",
            annotations=types.ToolAnnotations(
                title="Delete item", read_only_hint=False, destructive_hint=True,
                idempotent_hint=False, open_world_hint=False,
            ),
        )
        self._add(
            "meta_tool", self._meta_tool, _schema(),
            description="A tool whose definition carries server-side _meta.",
            meta={"example.com/origin": "tool_server", "tags": "server-native"},
        )

    # -- protocol handlers ---------------------------------------------------------------

    async def _list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self.peers.seen(ctx)
        return types.ListToolsResult(tools=[tool for tool, _ in self.tools.values()])

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        self.peers.seen(ctx)
        entry = self.tools.get(params.name)
        if entry is None:  # unknown tool: a protocol error, as the MCP spec says
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        make_noise(self.noisy_kb)
        try:
            result = await entry[1](ctx, dict(params.arguments or {}))
        except (KeyError, TypeError, ValueError) as exc:  # bad arguments: a tool error
            return _text(f"invalid arguments for {params.name}: {exc!r}", is_error=True)
        return _text(result) if isinstance(result, str) else result

    # -- tools ---------------------------------------------------------------------------

    async def _echo(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        text = str(args["text"])
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"result": text})

    async def _add_numbers(self, ctx: Ctx, args: dict[str, Any]) -> str:
        return str(int(args["a"]) + int(args["b"]))

    async def _fail(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(str(args.get("message", "failed")), is_error=True)

    async def _sleep(self, ctx: Ctx, args: dict[str, Any]) -> str:
        seconds = float(args["seconds"])
        _append_line("SMCP_TEST_STARTED_LOG", f"started {ctx.request_id} seconds={seconds}")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            _append_line("SMCP_TEST_CANCEL_LOG", f"cancelled {ctx.request_id} seconds={seconds}")
            raise
        return f"slept {seconds}" + "." * int(args.get("pad", 0))

    async def _crash(self, ctx: Ctx, args: dict[str, Any]) -> str:
        sys.stderr.flush()
        os._exit(3)

    async def _add_tool(self, ctx: Ctx, args: dict[str, Any]) -> str:
        name = str(args["name"])

        async def dynamic(ctx: Ctx, call_args: dict[str, Any]) -> str:
            return f"{name} called with {json.dumps(call_args, sort_keys=True)}"

        self._add(name, dynamic, {"type": "object"}, description=f"Added at runtime: {name}")
        self.added.add(self.prefix + name)
        await self.peers.notify(ctx, types.ToolListChangedNotification())
        return f"added {self.prefix + name}"

    async def _remove_tool(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        full = self.prefix + str(args["name"])
        if full not in self.added:
            return _text(f"no added tool named {full}", is_error=True)
        self.added.discard(full)
        del self.tools[full]
        await self.peers.notify(ctx, types.ToolListChangedNotification())
        return _text(f"removed {full}")

    async def _big(self, ctx: Ctx, args: dict[str, Any]) -> str:
        size = int(args["size"])
        return ("0123456789" * (size // 10 + 1))[:size]

    async def _image(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        data = blob_bytes(int(args["size"]), int(args.get("seed", 0)))
        image = types.ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type="image/png")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{len(data)} bytes"), image])

    async def _delete_item(self, ctx: Ctx, args: dict[str, Any]) -> str:
        return f"deleted {args['item']}"

    async def _meta_tool(self, ctx: Ctx, args: dict[str, Any]) -> str:
        return "meta ok"


def blob_bytes(size: int, seed: int = 0) -> bytes:
    """The bytes the `image` tool returns (tests compute them too)."""
    return random.Random(seed).randbytes(size)


def make_noise(kb: int) -> None:
    line = "noise " + "x" * 1017 + "\n"  # 1024 bytes per line
    for _ in range(kb):
        sys.stderr.write(line)
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_transport_arguments(parser)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--name", default="tool_server")
    parser.add_argument("--noisy-stderr", type=int, default=0, metavar="KB")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    make_noise(args.noisy_stderr)
    run(ToolServer(args.name, args.prefix, args.noisy_stderr), args.transport, args.port)


if __name__ == "__main__":
    main()
