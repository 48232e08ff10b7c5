"""Fields of an MCP server config that smcp_sync does not read: reported, never dropped
silently.

* a field the official SDK reads for something smcp_sync does not do refuses the config,
  saying why (`refuse_unsupported`: an ``oauth`` block on a stdio server), rather than
  running the server without it; an ``oauth`` block is checked as `oauth_mode` reads it;
* any other unknown field (a typo, a newer SDK's field) is named in a warning when the
  config is added and in `Computer.diagnostics()`, and otherwise ignored (the
  official SDK refuses them; a Computer that keeps running serves its other servers).
"""

from __future__ import annotations

from typing import Any, Mapping, NoReturn

import attrs

from ...protocol.models import (
    SseServerConfig,
    SseServerParameters,
    StdioServerConfig,
    StdioServerParameters,
    StreamableHttpServerConfig,
    StreamableHttpServerParameters,
    ToolMeta,
)
from .files import ConfigError
from .oauth_mode import check_resource, oauth_mode

#: Fields a null value of which (as 0.4.2's own dump writes them) asks for nothing.
NULLABLE = ("oauth",)

#: By `type`: the config class and its server_parameters class.
_BY_TYPE = {
    "stdio": (StdioServerConfig, StdioServerParameters),
    "sse": (SseServerConfig, SseServerParameters),
    "streamable": (StreamableHttpServerConfig, StreamableHttpServerParameters),
}


def refuse_unsupported(raw: Mapping[str, Any], server: str) -> None:
    """A `ConfigError` for an ``oauth`` block smcp_sync cannot run (a null one asks for nothing)."""
    oauth = raw.get("oauth")
    if oauth is None:
        return
    if raw.get("type", "stdio") == "stdio":
        _refuse(server, "oauth", "OAuth applies to sse and streamable servers only")
    if isinstance(oauth, Mapping) and oauth.get("resource") is not None:
        check_resource(oauth["resource"], server)
    oauth_mode(oauth.get("mode") if isinstance(oauth, Mapping) else None, server)


def _refuse(server: str, field: str, why: str) -> NoReturn:
    raise ConfigError(f"MCP server {server!r}: field {field!r} is not supported: {why}", details={"field": field, "mcp_server": server})


def unknown_fields(raw: Mapping[str, Any]) -> list[str]:
    """Wire paths of the fields of `raw` no model field reads (``x``, ``server_parameters.y``,
    ``tool_meta.<tool>.z``: 0.4.2 passes extra tool meta keys on, smcp_sync does not)."""
    classes = _BY_TYPE.get(raw.get("type", "stdio"))
    if classes is None:
        return []  # the codec refuses the type itself
    config_cls, params_cls = classes
    unset = {key for key in NULLABLE if raw.get(key, False) is None}
    unknown = sorted(set(raw) - _keys(config_cls) - unset)
    unknown += _extra_keys(raw.get("server_parameters"), params_cls, "server_parameters")
    unknown += _extra_keys(raw.get("default_tool_meta"), ToolMeta, "default_tool_meta")
    tool_meta = raw.get("tool_meta")
    for tool, meta in sorted(tool_meta.items()) if isinstance(tool_meta, Mapping) else ():
        unknown += _extra_keys(meta, ToolMeta, f"tool_meta.{tool}")
    return unknown


def _extra_keys(value: Any, cls: type, where: str) -> list[str]:
    return [f"{where}.{key}" for key in sorted(set(value) - _keys(cls))] if isinstance(value, Mapping) else []


def _keys(cls: type) -> set[str]:
    keys: set[str] = set()
    for attribute in attrs.fields(cls):
        keys.add(attribute.metadata.get("wire", attribute.name))
        keys.update(attribute.metadata.get("aliases", ()))
    return keys
