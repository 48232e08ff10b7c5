"""Run a low-level MCP ``Server`` over stdio, SSE or streamable HTTP (shared by the test servers).

Why a separate module: both test servers must offer the same three transports with the
same command line, and the HTTP variants must report their ephemeral port to the parent
the same way.  Imported by the server scripts as a sibling module (the scripts run as
``python path/to/script.py``, so their own directory is ``sys.path[0]``).

Command line (added by ``add_transport_arguments``)::

    --transport stdio|sse|streamable   (default stdio)
    --port N                           (HTTP only; default 0 = ephemeral)

HTTP transports bind 127.0.0.1 only.  Once uvicorn is accepting connections the script
prints exactly one line ``PORT=<n>`` to stdout (flushed) and nothing else to stdout.
URL paths are the SDK defaults:

* sse:        GET ``http://127.0.0.1:<n>/sse`` (the event stream), POST ``/messages/?session_id=...``
* streamable: ``http://127.0.0.1:<n>/mcp``

In stdio mode stdout is the protocol: nothing may be printed there (the SDK's
``stdio_server`` additionally diverts fd 1 to stderr while serving).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount, Route

HOST = "127.0.0.1"
SSE_PATH = "/sse"
SSE_MESSAGE_PATH = "/messages/"
STREAMABLE_PATH = "/mcp"

# Same DNS-rebinding protection the SDK enables by default for a localhost bind.
_LOCAL_ONLY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


def add_transport_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transport", choices=("stdio", "sse", "streamable"), default="stdio")
    parser.add_argument("--port", type=int, default=0, help="HTTP transports only; 0 = ephemeral")


def run(server: Server[Any], transport: str, port: int = 0) -> None:
    """Serve ``server`` until stdin closes (stdio) or the process is terminated (HTTP)."""
    if transport == "stdio":
        anyio.run(_run_stdio, server)
    elif transport == "sse":
        _run_http(_sse_app(server), port)
    elif transport == "streamable":
        _run_http(server.streamable_http_app(streamable_http_path=STREAMABLE_PATH, host=HOST), port)
    else:  # argparse already restricts the choices
        raise ValueError(f"unknown transport {transport!r}")


async def _run_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _sse_app(server: Server[Any]) -> Starlette:
    """The legacy HTTP+SSE transport, wired like the SDK's ``MCPServer.sse_app``."""
    sse = SseServerTransport(SSE_MESSAGE_PATH, security_settings=_LOCAL_ONLY)

    class SseEndpoint:
        # A class instance (not a function) so Starlette hands it the raw ASGI triple.
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            async with sse.connect_sse(scope, receive, send) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

    return Starlette(
        routes=[
            Route(SSE_PATH, endpoint=SseEndpoint(), methods=["GET"]),
            Mount(SSE_MESSAGE_PATH, app=sse.handle_post_message),
        ]
    )


def _run_http(app: Starlette, port: int) -> None:
    import uvicorn

    # Bind ourselves so that port 0 works and the real port is known before serving.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",  # uvicorn logs to stderr; access logs (stdout) are off
        access_log=False,
        timeout_graceful_shutdown=1,  # open SSE streams must not delay a SIGTERM
        lifespan="on",
    )
    uv_server = uvicorn.Server(config)

    async def main() -> None:
        serving = asyncio.ensure_future(uv_server.serve(sockets=[sock]))
        while not uv_server.started:
            if serving.done():  # startup failed: surface the error
                serving.result()
                return
            await asyncio.sleep(0.01)
        sys.stdout.write(f"PORT={bound_port}\n")
        sys.stdout.flush()
        await serving

    asyncio.run(main())
