"""MCP upstream authorization failures as 4006 / 4007 (spec-0.3/error-handling.md, "MCP
上游授权错误响应"; conformance vectors in spec-0.3/fixtures/auth_error_conformance_vectors.json).

Why a transport: a protected MCP server refuses a ``tools/call`` POST with HTTP 401 / 403,
and the `mcp` SDK's streamable HTTP client answers the call with a generic JSON-RPC error
("Server returned an error response", INTERNAL_ERROR): the status, which decides between
4006 and 4007, is lost (measured with mcp 2.3). `AuthStatusTransport` sits under the SDK's
HTTP client and turns such a response into a JSON-RPC error for that same request that
carries the status in its `data` (`HTTP_STATUS_KEY`), so the call fails at once, with
the status, through the SDK's ordinary error path; `authorization_code` reads it back.
The response keeps the server's ``WWW-Authenticate`` challenge: the SDK's auth above this
transport reads it (a client credentials grant asks for the scope a 403
``insufficient_scope`` names, and the request is sent again with the wider token).

The SSE client is worse off: its POSTs answer nothing (the answer comes on the event
stream), and a refused POST ends its writer, so the call would wait for its timeout and
every later message be lost. Given `on_refused`, the transport hands the same JSON-RPC
error to it (the adapter puts it on the session's read stream) and answers the POST with
``202 Accepted``, so the writer goes on.

Mapping (the spec's decision table): 401 -> 4006 (authorization missing or invalid,
with or without ``WWW-Authenticate``), 403 -> 4007 (authorized, but not enough).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable

import httpx2

from ...protocol.errors import ErrorCode

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

#: Where the HTTP status goes in the synthesized JSON-RPC error's `data`.
HTTP_STATUS_KEY = "a2c_http_status"
#: JSON-RPC INTERNAL_ERROR, the code the SDK itself uses for a failed POST.
_INTERNAL_ERROR = -32603
_SCOPE = re.compile(r'scope="([^"]*)"')
_CODE_BY_STATUS = {401: ErrorCode.TOOL_AUTHORIZATION_REQUIRED, 403: ErrorCode.TOOL_AUTHORIZATION_FAILED}


class AuthStatusTransport(httpx2.AsyncBaseTransport):
    """`inner`, with a 401 / 403 answer to a JSON-RPC request rewritten as a JSON-RPC
    error for that request naming the status (module doc). Other answers pass unchanged."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, on_refused: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self._inner = inner
        self._on_refused = on_refused

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method != "POST" or response.status_code not in _CODE_BY_STATUS:
            return response
        request_id = _jsonrpc_request_id(request)
        if request_id is None:
            return response
        await response.aclose()
        data: dict[str, Any] = {HTTP_STATUS_KEY: response.status_code}
        challenge = response.headers.get("www-authenticate")
        if challenge:
            data["www_authenticate"] = challenge[:200]
        error = {"code": _INTERNAL_ERROR, "message": f"HTTP {response.status_code} from the MCP server", "data": data}
        message = {"jsonrpc": "2.0", "id": request_id, "error": error}
        if self._on_refused is not None:
            self._on_refused(message)
            return httpx2.Response(202, request=request)
        body = json.dumps(message).encode()
        headers = {"content-type": "application/json", **({"www-authenticate": challenge} if challenge else {})}
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def authorization_code(data: Any) -> int | None:
    """4006 / 4007 for a JSON-RPC error `data` that `AuthStatusTransport` made; else None."""
    status = data.get(HTTP_STATUS_KEY) if isinstance(data, dict) else None
    code = _CODE_BY_STATUS.get(status) if isinstance(status, int) else None
    return int(code) if code is not None else None


def challenged_scope(data: Any) -> str | None:
    """The scope a 403's ``insufficient_scope`` challenge names (RFC 6750 section 3), from
    a JSON-RPC error `data` that `AuthStatusTransport` made; else None."""
    challenge = data.get("www_authenticate") if isinstance(data, dict) else None
    if not isinstance(challenge, str) or "insufficient_scope" not in challenge:
        return None
    found = _SCOPE.search(challenge)
    return found.group(1).strip() or None if found else None


def connection_authorization_code(exc: BaseException) -> int | None:
    """4006 / 4007 when a connection attempt failed for want of authorization: its
    initialize refused with 401 / 403 (streamable), or the SSE stream's GET refused."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.HTTPStatusError):
        code = _CODE_BY_STATUS.get(exc.response.status_code)
        return int(code) if code is not None else None
    return authorization_code(getattr(exc, "data", None))


def _jsonrpc_request_id(request: httpx2.Request) -> Any:
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if isinstance(message, dict) and "method" in message and isinstance(message.get("id"), (int, str)):
        return message["id"]
    return None
