"""The one place where an MCP server's failure becomes an SMCP error code.

Three kinds of answer come out of it, one per kind of request (docs/wire/index.md):

* a request of the Computer's own (`ServerManager.request`: listing, reading,
  subscribing, completing) raises an `SMCPError` (`request_error`): an unknown resource
  or method, or invalid params, is the server *refusing* (404 / 400 with ``mcp_code`` in
  the details); a Finder code 4201-4204 the server reports is kept with its message
  (as its JSON-RPC code, or by the convention of `smcp_sync/demo/servers/finder_errors.py`:
  ``data.smcp_code`` or a ``[42xx] `` message prefix);
  anything else is `MCPServerError` (500); a server that is down, 500 with its state; a
  timeout, 408;
* a `dpe://` read the server answers with "not found" gets the Finder code of the level
  asked for (`dpe_not_found`);
* a tool call never raises: its failure is a `CallToolResult` with ``isError``
  (`tool_call_failure`); a server refusing it for want of authorization is 4006 / 4007
  with a non-secret ``auth_hint`` (`unauthorized`).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ...protocol.dpe_uri import DPEURI
from ...protocol.errors import ErrorCode, InternalError, SMCPError, SMCPTimeoutError, cut_short
from ...protocol.models import CallToolResult
from .adapter import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, McpFailure
from .server_connection import ServerUnavailable
from .upstream_auth import authorization_code, challenged_scope

#: The SMCP codes an MCP server may report for itself; any other code it claims (an
#: office or auth error, say) is not its to give, and stays an MCP server error.
_REPORTABLE_CODES = frozenset(
    {ErrorCode.DOCUMENT_NOT_FOUND, ErrorCode.PAGE_OUT_OF_RANGE, ErrorCode.ELEMENT_NOT_FOUND, ErrorCode.INVALID_DPE_URI}
)
_CODE_PREFIX = re.compile(r"^\[(\d{4})\] ?")

#: An MCP server refusing a request, not failing it: the caller asked for something that
#: is not there or asked it wrongly, so it gets a 4xx (with ``mcp_code`` in the details).
_REFUSALS = {
    INVALID_PARAMS: ErrorCode.BAD_REQUEST,
    METHOD_NOT_FOUND: ErrorCode.NOT_FOUND,
    RESOURCE_NOT_FOUND: ErrorCode.NOT_FOUND,
}

#: How a request to an MCP server fails (each becomes an `SMCPError`, `request_error`).
REQUEST_FAILURES = (ServerUnavailable, TimeoutError, McpFailure)


class MCPServerError(InternalError):
    """An MCP server could not serve a request (down, or it answered with an error)."""

    @property
    def mcp_code(self) -> int | None:
        """The MCP server's JSON-RPC error code, when it answered with one."""
        return self.details.get("mcp_code")


def request_error(server: str, exc: BaseException, what: str, timeout: float) -> SMCPError:
    """The `SMCPError` for one of `REQUEST_FAILURES` of a request to `server`."""
    details: dict[str, Any] = {"mcp_server": server}
    if isinstance(exc, ServerUnavailable):
        return MCPServerError(str(exc), details={**details, "state": exc.status.state.value})
    if isinstance(exc, TimeoutError):
        return SMCPTimeoutError(f"MCP server {server!r} did not answer {what} within {timeout:g}s", details=details)
    assert isinstance(exc, McpFailure)
    reported = _reported_error(exc, details)
    if reported is not None:
        return reported
    if exc.code is not None:
        details["mcp_code"] = exc.code
    message = f"MCP server {server!r}: {cut_short(exc.message, 400)}"
    refused_as = _REFUSALS.get(exc.code) if exc.code is not None else None
    if refused_as is not None:
        return SMCPError.for_code(refused_as, message, details)
    return MCPServerError(message, details=details)


def _reported_error(failure: McpFailure, details: dict[str, Any]) -> SMCPError | None:
    """The Finder error the MCP server reported, with its message and details and our
    `details` added; None if it reported none. The code is ``data.smcp_code`` (our
    convention), else the JSON-RPC code itself (the Finder guide's "MCP Server → Computer
    → Server → Agent" chain: a server raising code 4202), else a ``[42xx] `` prefix of
    the message. The details are ``data.details``, or the rest of ``data``."""
    message = failure.server_message
    if message is None:
        return None
    data = failure.data if isinstance(failure.data, Mapping) else {}
    prefix = _CODE_PREFIX.match(message)
    code = data.get("smcp_code")
    if isinstance(code, bool) or not isinstance(code, int):
        code = failure.code if failure.code in _REPORTABLE_CODES else int(prefix.group(1)) if prefix else None
    if code not in _REPORTABLE_CODES:
        return None
    reported = data.get("details", {key: value for key, value in data.items() if key != "smcp_code"})
    merged = {**(reported if isinstance(reported, Mapping) else {}), **details}
    return SMCPError.for_code(code, message[prefix.end() :] if prefix else message, merged)


#: An MCP server's "no such resource" (-32602 in revisions after 2025-11-25); a `dpe://`
#: URI it is given has passed our checks, so invalid params can only mean that.
_NOT_FOUND_CODES = (RESOURCE_NOT_FOUND, INVALID_PARAMS)

_NOT_FOUND_BY_LEVEL = {
    0: ErrorCode.DOCUMENT_NOT_FOUND,
    1: ErrorCode.DOCUMENT_NOT_FOUND,
    2: ErrorCode.PAGE_OUT_OF_RANGE,
    3: ErrorCode.ELEMENT_NOT_FOUND,
}


def dpe_not_found(text: str, uri: DPEURI, exc: SMCPError) -> SMCPError:
    """`exc` as the Finder error of `uri`'s level when it is the server's "resource not
    found" answer to reading `uri` (written `text`); else `exc` itself."""
    if exc.details.get("mcp_code") not in _NOT_FOUND_CODES:
        return exc
    address = {"doc_ref": uri.doc_ref, "page_index": uri.page_index, "element_id": uri.element_id}
    details = {**exc.details, "uri": text, **{k: v for k, v in address.items() if v is not None}}
    return SMCPError.for_code(_NOT_FOUND_BY_LEVEL[uri.level], exc.message, details)


def tool_call_failure(server: str, tool: str, exc: ServerUnavailable | McpFailure) -> CallToolResult:
    """The result of a call of `tool` (its exposed name) that `server` could not serve."""
    if isinstance(exc, ServerUnavailable):
        code = exc.status.authorization_code
        if code is not None:
            return unauthorized(server, tool, exc.status.error or str(exc), code)
        return CallToolResult.failure(ErrorCode.TOOL_EXECUTION_FAILED, str(exc))
    code = authorization_code(exc.data)
    if code is not None:
        return unauthorized(server, tool, exc.message, code, challenged_scope(exc.data))
    return CallToolResult.failure(
        ErrorCode.TOOL_EXECUTION_FAILED, f"tool {tool!r} failed on MCP server {server!r}: {exc.message}"
    )


def unauthorized(server: str, tool: str, reason: str, code: int, scope: str | None = None) -> CallToolResult:
    """4006 / 4007: the MCP server refused the call for want of authorization (the
    user must act where the Computer runs; nothing secret goes to the Agent). The hint's
    `action` is the one a2c-smcp 0.4.2 sends for the code, so a Host routes both alike;
    its message also fits a server authorized by client credentials (nobody signs in).
    A 4007 whose challenge named the `scope` wanted says how to authorize exactly that."""
    if code == ErrorCode.TOOL_AUTHORIZATION_REQUIRED:
        needs = "needs an authorization"
        hint = {
            "action": "user_authorization_required",
            "message": f"authorize MCP server {server!r} on the Computer (or check its client credentials there), then retry",
        }
    elif scope:
        needs = "was refused with its authorization"
        listed = scope.split()
        hint = {
            "action": "token_refresh_required",
            "message": f"MCP server {server!r} asks for OAuth scope {scope!r}, which its authorization lacks: "
            f"authorize it again with that scope on the Computer (Computer.authorize({server!r}, scopes={listed!r}), "
            f"or smcp-sync authorize {server} {' '.join(f'--scope {word}' for word in listed)}), then retry",
        }
    else:
        needs = "was refused with its authorization"
        hint = {
            "action": "token_refresh_required",
            "message": f"the authorization of MCP server {server!r} has expired or lacks a permission:"
            " authorize it again or check its permissions on the Computer, then retry",
        }
    message = f"tool {tool!r} {needs} on MCP server {server!r}: {reason}"
    return CallToolResult.failure(code, message, mcp_server=server, auth_hint=hint)
