"""The test tool server over streamable HTTP (or SSE), behind a gate that refuses every
``tools/call`` with an HTTP status: a protected MCP server whose authorization the
Computer lacks (spec-0.3/fixtures/auth_error_conformance_vectors.json: "initialize /
notifications:initialized pass, only tools/call gets the given HTTP status"). With
``--refuse-all`` every request gets it: the Computer cannot even connect.

    python protected_server.py --status 401 [--www-authenticate 'Bearer realm="mcp"'] [--transport streamable|sse]
        [--refuse-all] [--port 0]

Prints ``PORT=<n>`` once serving (``_serve``); the MCP endpoint is ``/mcp`` (``/sse``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _serve import HOST, STREAMABLE_PATH, _run_http, _sse_app  # noqa: E402
from tool_server import ToolServer  # noqa: E402


class RefuseToolCalls:
    """ASGI middleware: a POST whose JSON-RPC body is a ``tools/call`` gets `status`
    (every request, with `refuse_all`)."""

    def __init__(self, app: Any, status: int, www_authenticate: str | None, refuse_all: bool = False) -> None:
        self.app, self.status, self.www_authenticate, self.refuse_all = app, status, www_authenticate, refuse_all

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.refuse_all:
            await self._refuse(send)
            return
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if method != "tools/call":
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        headers = [(b"content-type", b"application/json")]
        if self.www_authenticate:
            headers.append((b"www-authenticate", self.www_authenticate.encode()))
        payload = json.dumps({"error": "refused by the test gate"}).encode()
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--status", type=int, required=True)
    parser.add_argument("--www-authenticate")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transport", choices=("streamable", "sse"), default="streamable")
    parser.add_argument("--refuse-all", action="store_true")
    args = parser.parse_args()
    server = ToolServer("protected", "", 0)
    if args.transport == "sse":
        app = _sse_app(server)
    else:
        app = server.streamable_http_app(streamable_http_path=STREAMABLE_PATH, host=HOST)
    _run_http(RefuseToolCalls(app, args.status, args.www_authenticate, args.refuse_all), args.port)


if __name__ == "__main__":
    main()
