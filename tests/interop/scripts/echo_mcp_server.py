"""A tiny stdio MCP server for the interop tests, written for mcp 1.x (FastMCP).

Run by the official SDK venv's python (mcp<2). Usage::

    python echo_mcp_server.py [--host-id echo.test]

Tools:
  echo(text) -> text; add(a, b) -> a + b; slow(seconds) -> "slept <seconds>";
  fail(message) raises (FastMCP turns it into an ``isError`` result);
  set_window(text): changes the main window's text and sends ``resources/updated`` for it;
  add_window(name, text): adds ``window://<host-id>/<name>`` and sends
  ``resources/list_changed``; tools_changed(): sends ``tools/list_changed``.
Resources: ``window://<host-id>/main?priority=50`` and ``window://<host-id>/aux?priority=10``
(text), plus the non-window ``note://<host-id>/readme``.
"""

from __future__ import annotations

import argparse

import anyio
from mcp.server.fastmcp import Context, FastMCP
from pydantic import AnyUrl


def build(host_id: str) -> FastMCP:
    mcp = FastMCP("echo")
    main_uri = f"window://{host_id}/main?priority=50"
    state = {"main": "hello from the echo main window"}

    @mcp.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(description="Sleep for the given number of seconds.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool(description="Always fails with the given message.")
    def fail(message: str) -> str:
        raise ValueError(message)

    @mcp.tool(description="Change the main window text (sends resources/updated).")
    async def set_window(text: str, ctx: Context) -> str:
        state["main"] = text
        await ctx.session.send_resource_updated(AnyUrl(main_uri))
        return "ok"

    @mcp.tool(description="Add a window (sends resources/list_changed).")
    async def add_window(name: str, text: str, ctx: Context) -> str:
        uri = f"window://{host_id}/{name}"

        def read() -> str:
            return text

        mcp.resource(uri, name=name, mime_type="text/plain")(read)
        await ctx.session.send_resource_list_changed()
        return uri

    @mcp.tool(description="Send tools/list_changed.")
    async def tools_changed(ctx: Context) -> str:
        await ctx.session.send_tool_list_changed()
        return "ok"

    @mcp.resource(main_uri, name="main", mime_type="text/plain")
    def main_window() -> str:
        return state["main"]

    @mcp.resource(f"window://{host_id}/aux?priority=10", name="aux", mime_type="text/plain")
    def aux_window() -> str:
        return "the aux window"

    @mcp.resource(f"note://{host_id}/readme", name="readme", mime_type="text/plain")
    def readme() -> str:
        return "not a window"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host-id", default="echo.test")
    args = parser.parse_args()
    build(args.host_id).run("stdio")


if __name__ == "__main__":
    main()
