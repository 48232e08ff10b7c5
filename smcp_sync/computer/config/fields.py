"""Fields of an MCP server config that smcp_sync does not read: reported, never dropped
silently.

* a field the official SDK reads for something smcp_sync does not do refuses the config,
  saying why (`refuse_unsupported`: an ``oauth`` block on a stdio server, an OAuth mode
  other than the authorization code grant), rather than running the server without it;
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

#: Fields a null value of which (as 0.4.2's own dump writes them) asks for nothing.
NULLABLE = ("oauth",)
#: The OAuth modes smcp_sync runs: the authorization code grant (PKCE), its client
#: registered dynamically or beforehand (a public client: no secret).
_OAUTH_MODES: dict[tuple[Any, Any], set[str]] = {("authorizationCode", "dynamic"): set(), ("authorizationCode", "preregistered"): {"clientId"}}

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
        _refuse(server, "oauth.resource", "the resource is the one the server's protected resource metadata names")
    mode = oauth.get("mode") if isinstance(oauth, Mapping) else None
    if not isinstance(mode, Mapping):
        _refuse(server, "oauth.mode", "an object such as {\"type\": \"authorizationCode\", \"registration\": \"dynamic\"}")
    kind = (mode.get("type"), mode.get("registration"))
    needed = _OAUTH_MODES.get(kind)
    if needed is None:
        _refuse(server, "oauth.mode", f"mode {kind[0]!r} / registration {kind[1]!r} is not supported: smcp_sync runs the "
                "authorization code grant, with a dynamic or a pre-registered public client")
    if mode.get("clientSecretInput") is not None:
        _refuse(server, "oauth.mode.clientSecretInput", "confidential clients are not supported: register a public client")
    missing = sorted(key for key in needed if not isinstance(mode.get(key), str) or not mode.get(key))
    if missing:
        _refuse(server, f"oauth.mode.{missing[0]}", "required for a pre-registered client")


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
