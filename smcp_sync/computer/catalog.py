"""The Computer's tool list: every MCP server's tools as `SMCPTool`s, with their routes.

A pure function of the servers' configurations (in order) and status snapshots, rebuilt
whenever one of them changes. Rules:

* the exposed name is `tool_meta[<tool>].alias` if set, else the MCP tool name;
* `forbidden_tools` (original or exposed names) are not exposed; calling them is 4002;
* a name clash never takes the list down: the server earlier in the configuration
  keeps the name, the later tool is hidden and reported in `diagnostics`. Ownership is
  decided over running *and* restarting servers, so a crash does not hand a name to
  another server's tool for a while;
* tools of a restarting server are not listed; calling them is 4003 (not "unknown").
* `meta` keeps the server's own `_meta` keys (complex values as JSON strings), plus
  `a2c_tool_meta` (merged ToolMeta as a JSON string) and `MCP_TOOL_ANNOTATION`
  (annotations as a JSON string), per spec/data-structures.md.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import attrs

from ..protocol.models import A2C_TOOL_META, MCP_TOOL_ANNOTATION, MCPServerConfig, SMCPTool, ToolMeta
from .status import ServerState, ServerStatus, ServerTool

#: States whose last known tools claim their names.
_CLAIMING = (ServerState.RUNNING, ServerState.RESTARTING, ServerState.STARTING)


@attrs.frozen
class ToolRoute:
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
    diagnostics: tuple[str, ...] = ()


def build_catalog(servers: Sequence[tuple[MCPServerConfig, ServerStatus]]) -> ToolCatalog:
    tools: list[SMCPTool] = []
    routes: dict[str, ToolRoute] = {}
    forbidden: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    diagnostics: list[str] = []
    owners: dict[str, str] = {}
    for config, status in servers:
        if status.state is ServerState.RESTARTING:
            diagnostics.append(f"MCP server {config.name!r} is restarting: {status.error or 'unknown reason'}")
        if status.state not in _CLAIMING:
            continue
        banned = set(config.forbidden_tools)
        for tool in status.tools:
            meta = _merged_meta(config, tool.name)
            exposed = meta.alias if meta is not None and meta.alias else tool.name
            if tool.name in banned or exposed in banned:
                forbidden.setdefault(exposed, config.name)
                forbidden.setdefault(tool.name, config.name)
                continue
            owner = owners.get(exposed)
            if owner is not None:
                diagnostics.append(_clash(exposed, tool.name, config.name, owner))
                continue
            owners[exposed] = config.name
            if status.state is ServerState.RUNNING:
                routes[exposed] = ToolRoute(server=config.name, tool=tool.name, exposed=exposed, meta=meta)
                tools.append(to_smcp_tool(tool, exposed, meta))
            else:
                unavailable[exposed] = config.name
    return ToolCatalog(
        tools=tuple(tools),
        routes=routes,
        forbidden=forbidden,
        unavailable=unavailable,
        diagnostics=tuple(diagnostics),
    )


def to_smcp_tool(tool: ServerTool, exposed: str, meta: ToolMeta | None) -> SMCPTool:
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


def _clash(exposed: str, tool: str, server: str, owner: str) -> str:
    where = "another of its tools" if owner == server else f"MCP server {owner!r} (earlier in the configuration)"
    return (
        f"tool name clash: {exposed!r} of MCP server {server!r} is hidden because {where} already provides it; "
        f"set tool_meta.{tool}.alias on {server!r} to expose it"
    )
