"""A server's `vrl` script: a Vector Remap Language program run on each of its tool results.

What a2c-smcp 0.4.2 does, so a config moved from it transforms the same way and Agents
of either SDK read the same key: the event is the result as 0.4.2 dumps it (the MCP SDK
1.x model dump: ``meta``, ``content`` with every optional key, null included,
``structuredContent``, ``isError``) plus ``tool_name`` (the MCP server's own name for
the tool) and ``parameters``; the program's resulting event goes, as a JSON string, to
``meta.a2c_vrl_transformed``. The runtime's timezone is the machine's (tzlocal), UTC if
that is unknown.

Where we differ: the script is compiled once, when the config is loaded, so a script
VRL cannot compile (a syntax error, or a fallible expression left unhandled, VRL's
E103) is refused then, naming the server; 0.4.2 checks the syntax only and then fails
every call. A runtime failure (``abort``, a failing ``!`` call) leaves the result as it
was and logs one warning. The run is CPU work of a few tens of microseconds: it happens
on the thread waiting for the result, never on the bridge loop.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Mapping

from ...protocol.codec import to_wire
from ...protocol.errors import BadRequestError
from ...protocol.models import CallToolResult

log = logging.getLogger(__name__)

#: The `meta` key of the transformed event (a2c-smcp's `A2C_VRL_TRANSFORMED`).
VRL_TRANSFORMED = "a2c_vrl_transformed"
EXTRA = "smcp_sync[vrl]"

#: Optional keys the MCP SDK 1.x dump writes as null, per content block type.
_BLOCK_KEYS = {
    "text": ("annotations", "meta"),
    "image": ("annotations", "meta"),
    "audio": ("annotations", "meta"),
    "resource": ("annotations", "meta"),
    "resource_link": ("title", "description", "mimeType", "size", "icons", "annotations", "meta"),
}
_RESOURCE_KEYS = ("mimeType", "meta")
_ANNOTATION_KEYS = ("audience", "priority")


class VrlError(BadRequestError):
    """A `vrl` script that cannot be used; the message names the server and says why."""


class VrlScript:
    """One server's compiled program; thread-safe (the runtime holds no per-run state)."""

    def __init__(self, source: str, server: str) -> None:
        try:
            from vrl_python import VRLRuntime
        except ImportError:
            raise VrlError(
                f"MCP server {server!r} has a vrl script, which needs the VRL runtime: pip install '{EXTRA}'",
                details={"field": "vrl", "mcp_server": server},
            ) from None
        self.source = source
        self.server = server
        try:
            self._runtime = VRLRuntime(timezone=_local_timezone())
        except ValueError:  # a zone name VRL does not know
            self._runtime = VRLRuntime(timezone="UTC")
        try:
            self._runtime.compile(source)
        except ValueError as exc:
            raise VrlError(
                f"MCP server {server!r}: its vrl script does not compile:{_diagnostic(exc)}",
                details={"field": "vrl", "mcp_server": server},
            ) from None

    def transform(self, result: CallToolResult, tool: str, params: Mapping[str, Any]) -> CallToolResult:
        """`result` with the transformed event in its meta; unchanged if the program fails."""
        try:
            outcome = self._runtime.execute(self.source, tool_event(result, tool, params))
            transformed = json.dumps(outcome.processed_event, ensure_ascii=False)
        except (RuntimeError, ValueError, TypeError) as exc:
            log.warning(
                "vrl script of MCP server %r failed on a result of tool %r; result left as it was:%s",
                self.server, tool, _diagnostic(exc),
            )  # fmt: skip
            return result
        return CallToolResult(
            content=result.content,
            is_error=result.is_error,
            structured_content=result.structured_content,
            meta={**(result.meta or {}), VRL_TRANSFORMED: transformed},
        )


def compile_script(source: str | None, server: str) -> VrlScript | None:
    """The server's compiled script; None for no script (or a blank one, as in 0.4.2)."""
    if source is None or not source.strip():
        return None
    return VrlScript(source, server)


def tool_event(result: CallToolResult, tool: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The VRL event of a result, key for key what a2c-smcp 0.4.2 builds."""
    return {
        "meta": result.meta,
        "content": [_dumped_block(block) for block in to_wire(result.content)],
        "structuredContent": result.structured_content,
        "isError": result.is_error,
        "tool_name": tool,
        "parameters": dict(params),
    }


def _dumped_block(block: dict[str, Any]) -> dict[str, Any]:
    dumped = _with_nulls(block, _BLOCK_KEYS.get(str(block.get("type")), ("annotations", "meta")))
    if isinstance(dumped.get("resource"), dict):
        dumped["resource"] = _with_nulls(dumped["resource"], _RESOURCE_KEYS)
    if isinstance(dumped.get("annotations"), dict):
        dumped["annotations"] = _with_nulls(dumped["annotations"], _ANNOTATION_KEYS)
    return dumped


def _with_nulls(wire: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    dumped = {("meta" if key == "_meta" else key): value for key, value in wire.items()}
    return {**{key: None for key in keys}, **dumped}


def _diagnostic(exc: BaseException) -> str:
    text = str(exc).rstrip()
    return text if text.startswith("\n") else f" {text}"


def _local_timezone() -> str:
    try:
        import tzlocal

        return str(tzlocal.get_localzone())
    except Exception:  # no tzlocal, or a machine whose zone it cannot name
        return "UTC"
