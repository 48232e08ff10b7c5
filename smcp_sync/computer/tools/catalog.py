"""The Computer's tool list: every MCP server's tools as `SMCPTool`s, with their routes.

A pure function of the servers' configurations (in order) and status snapshots, rebuilt
whenever one of them changes. Rules:

* the exposed name is ``{bundle_id}__{alias or tool}`` (spec-0.3 BundleID model), with
  ``tool_meta[<tool>].alias`` as the alias; `SMCPTool.bundle_id` names the server;
* a bare name (the part after ``{bundle_id}__``) is still accepted by `resolve` when
  exactly one exposed tool has it, for code written before exposed names had a prefix;
* `forbidden_tools` (original, alias or exposed names) are not exposed; calling them is 4002;
* two tools of one server aliased to one name never take the list down: the first keeps
  the name, the other is hidden and reported in `diagnostics` (servers cannot clash: their
  bundle_ids differ);
* tools of a restarting server are not listed; calling them is 4003 (not "unknown").
* `meta` keeps the server's own `_meta` keys (complex values as JSON strings), plus
  `a2c_tool_meta` (merged ToolMeta as a JSON string) and `MCP_TOOL_ANNOTATION`
  (annotations as a JSON string), per spec/data-structures.md.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import attrs

from ...protocol.bundle_id import exposed_tool_name
from ...protocol.models import A2C_TOOL_META, MCP_TOOL_ANNOTATION, MCPServerConfig, SMCPTool, ToolMeta
from ..mcp.status import ServerState, ServerStatus, ServerTool

#: States whose last known tools claim their names.
_CLAIMING = (ServerState.RUNNING, ServerState.RESTARTING, ServerState.STARTING, ServerState.NEEDS_AUTHORIZATION)


@attrs.frozen
class ToolRoute:
    #: The MCP server's bundle_id.
    server: str
    #: The MCP server's own name for the tool.
    tool: str
    #: The name agents see and call.
    exposed: str
    meta: ToolMeta | None = None

    @property
    def auto_apply(self) -> bool:
        return self.meta is not None and self.meta.auto_apply is True


@attrs.frozen
class ToolCatalog:
    tools: tuple[SMCPTool, ...] = ()
    routes: Mapping[str, ToolRoute] = attrs.field(factory=dict)
    #: Forbidden tool names (original and exposed) -> server.
    forbidden: Mapping[str, str] = attrs.field(factory=dict)
    #: Exposed names owned by a server that is down right now -> server.
    unavailable: Mapping[str, str] = attrs.field(factory=dict)
    #: Bare tool names (the alias, else the MCP name) -> the exposed names that end in them.
    bare: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: Servers whose last connection was refused for want of authorization -> 4006 / 4007.
    unauthorized: Mapping[str, int] = attrs.field(factory=dict)
    diagnostics: tuple[str, ...] = ()

    def unauthorized_server(self, name: str) -> str | None:
        """The unauthorized server `name` belongs to, by its ``{bundle_id}__`` prefix (its
        tools are not listed before it connects)."""
        return next((server for server in self.unauthorized if name.startswith(f"{server}__")), None)

    def resolve(self, name: str) -> str | tuple[str, ...]:
        """The exposed name `name` stands for: itself if it is one, else the one exposed
        name whose bare name it is; the candidates when it is ambiguous (or none)."""
        if name in self.routes or name in self.forbidden or name in self.unavailable:
            return name
        candidates = self.bare.get(name, ())
        return candidates[0] if len(candidates) == 1 else candidates


def build_catalog(servers: Sequence[tuple[MCPServerConfig, ServerStatus]]) -> ToolCatalog:
    """`servers`: (config with its resolved `bundle_id`, status), in configuration order."""
    tools: list[SMCPTool] = []
    routes: dict[str, ToolRoute] = {}
    forbidden: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    bare: dict[str, list[str]] = {}
    diagnostics: list[str] = []
    unauthorized: dict[str, int] = {}
    for config, status in servers:
        bundle_id = status.bundle_id
        if status.authorization_code is not None and status.state is not ServerState.RUNNING:
            unauthorized[bundle_id] = status.authorization_code
        if status.state is ServerState.RESTARTING:
            diagnostics.append(f"MCP server {bundle_id!r} is restarting: {status.error or 'unknown reason'}")
        if status.state is ServerState.NEEDS_AUTHORIZATION:
            diagnostics.append(
                f"MCP server {bundle_id!r} needs an OAuth authorization ({status.error or 'refused'}): authorize it "
                f"on this Computer (Computer.authorize, or smcp-sync authorize {bundle_id})"
            )
        if status.state not in _CLAIMING:
            continue
        banned = set(config.forbidden_tools)
        for tool in status.tools:
            meta = _merged_meta(config, tool.name)
            local = meta.alias if meta is not None and meta.alias else tool.name
            exposed = exposed_tool_name(bundle_id, local)
            if exposed in routes or exposed in unavailable or exposed in forbidden:
                diagnostics.append(_clash(exposed, tool.name, bundle_id))
                continue
            bare.setdefault(local, []).append(exposed)
            if banned.intersection((tool.name, local, exposed)):
                forbidden[exposed] = bundle_id
            elif status.state is ServerState.RUNNING:
                routes[exposed] = ToolRoute(server=bundle_id, tool=tool.name, exposed=exposed, meta=meta)
                tools.append(to_smcp_tool(tool, exposed, bundle_id, meta))
            else:
                unavailable[exposed] = bundle_id
    return ToolCatalog(
        tools=tuple(tools),
        routes=routes,
        forbidden=forbidden,
        unavailable=unavailable,
        bare={name: tuple(exposed) for name, exposed in bare.items()},
        unauthorized=unauthorized,
        diagnostics=tuple(diagnostics),
    )


def to_smcp_tool(tool: ServerTool, exposed: str, bundle_id: str, meta: ToolMeta | None) -> SMCPTool:
    tool_meta = {key: _attribute_value(value) for key, value in (tool.meta or {}).items()}
    if meta is not None:
        tool_meta[A2C_TOOL_META] = meta.to_json()
    if tool.annotations:
        tool_meta[MCP_TOOL_ANNOTATION] = json.dumps(tool.annotations, ensure_ascii=False)
    return SMCPTool(
        name=exposed,
        description=tool.description or tool.title or "",
        params_schema=tool.input_schema,
        return_schema=tool.output_schema,
        meta=tool_meta,
        bundle_id=bundle_id,
    )


def _merged_meta(config: MCPServerConfig, tool_name: str) -> ToolMeta | None:
    specific = config.tool_meta.get(tool_name)
    if specific is None:
        return config.default_tool_meta
    return specific.merged_over(config.default_tool_meta)


def _attribute_value(value: Any) -> Any:
    """`meta` values must be simple attributes (spec); anything else travels as JSON text."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _clash(exposed: str, tool: str, bundle_id: str) -> str:
    return (
        f"tool name clash: {exposed!r} of MCP server {bundle_id!r} is hidden because another of its tools "
        f"already has that name; set tool_meta.{tool}.alias on {bundle_id!r} to expose it"
    )
