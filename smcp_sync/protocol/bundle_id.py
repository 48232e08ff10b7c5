"""BundleID: the identity of an MCP server on the wire (spec-0.3 data-structures.md,
"MCP Tool 命名与路由").

A server's `bundle_id` is its explicit `bundle_id` when configured (checked: only
``[A-Za-z0-9_-]``, no ``__``), else derived from its `name`: every code point outside
that ASCII class becomes ``_``, runs of ``_`` fold to one, leading and trailing ``_`` /
``-`` go; when nothing is left, ``bundle_`` + the first 8 bytes (hex) of the SHA-256 of
the server's connection identity (a length-prefixed byte frame of its raw, unrendered
connection fields, so rotating a secret never renames its tools). Byte for byte what
the conformance vectors of spec-0.3/fixtures require.

Tools are exposed as ``{bundle_id}__{alias or tool}``: ``__`` cannot occur in a
bundle_id, so the name is unambiguous even when the tool's own name contains ``__``.
"""

from __future__ import annotations

import hashlib
import re
import struct
from typing import Any, Mapping, Sequence

#: Between the bundle_id and the tool part of an exposed tool name.
SEPARATOR = "__"

_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_VALID = re.compile(r"[A-Za-z0-9_-]+")
_UNDERSCORES = re.compile(r"_+")
_FALLBACK_PREFIX = "bundle_"


class InvalidBundleId(ValueError):
    """An explicit `bundle_id` that breaks the rules; the message says which."""


def exposed_tool_name(bundle_id: str, tool: str) -> str:
    """The name agents see and call: ``{bundle_id}__{tool}`` (`tool`: alias or MCP name)."""
    return f"{bundle_id}{SEPARATOR}{tool}"


def check_bundle_id(value: Any) -> str:
    """`value` if it is a valid explicit bundle_id; raises `InvalidBundleId` otherwise."""
    if not isinstance(value, str) or not value:
        raise InvalidBundleId(f"bundle_id must be a non-empty string (or left out), got {value!r:.60}")
    if SEPARATOR in value:
        raise InvalidBundleId(f"bundle_id must not contain '__' (it separates bundle_id and tool): {value!r:.60}")
    if _VALID.fullmatch(value) is None:
        raise InvalidBundleId(f"bundle_id may only use the characters A-Z a-z 0-9 _ - (no '.'): {value!r:.60}")
    return value


def resolve_bundle_id(config: Mapping[str, Any]) -> str:
    """The bundle_id of a raw MCP server config (the official SDK's JSON shape, before
    `${input:...}` placeholders are rendered); raises `InvalidBundleId` for a bad explicit one."""
    explicit = config.get("bundle_id")
    if explicit is not None:
        return check_bundle_id(explicit)
    name = config.get("name")
    derived = normalize_name(name) if isinstance(name, str) else ""
    if derived:
        return derived
    digest = hashlib.sha256(connection_identity(config)).digest()
    return _FALLBACK_PREFIX + digest[:8].hex()


def normalize_name(name: str) -> str:
    """Step 1 of the derivation: may be empty (then the connection identity decides)."""
    replaced = "".join(c if c in _ALLOWED else "_" for c in name)
    return _UNDERSCORES.sub("_", replaced).strip("_-")


def connection_identity(config: Mapping[str, Any]) -> bytes:
    """The connection-identity frame: stdio = type, command, args (in order), env (by
    key); sse / streamable = type, url, headers (by key). Each string is a u32 big-endian
    byte length and its UTF-8; a list or map starts with its u32 item count."""
    kind = config.get("type")
    params = config.get("server_parameters")
    params = params if isinstance(params, Mapping) else {}
    if kind == "stdio":
        return b"".join(
            (_text("stdio"), _text(params.get("command")), _texts(params.get("args")), _pairs(params.get("env")))
        )
    return b"".join((_text(str(kind)), _text(params.get("url")), _pairs(params.get("headers"))))


def _text(value: Any) -> bytes:
    data = ("" if value is None else str(value)).encode("utf-8")
    return struct.pack(">I", len(data)) + data


def _texts(values: Sequence[Any] | None) -> bytes:
    items = list(values or ())
    return struct.pack(">I", len(items)) + b"".join(_text(item) for item in items)


def _pairs(values: Mapping[str, Any] | None) -> bytes:
    items = sorted((values or {}).items())
    return struct.pack(">I", len(items)) + b"".join(_text(key) + _text(value) for key, value in items)
