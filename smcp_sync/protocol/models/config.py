"""Computer configuration: MCP server configs and inputs, in the official SDK's JSON format.

The unions are tagged by `type` ("stdio" / "sse" / "streamable", and "promptString" /
"pickString" / "command"), so a config file written for the official Python SDK loads
unchanged. Defaults match that SDK (which takes them from the MCP SDK's parameter models).
"""

from __future__ import annotations

import datetime
from typing import Any, Literal, Mapping, NewType, Union

import pydantic

from ..codec import WireValueError, converter, register_tagged_union, shown
from ._fields import empty_dict, empty_list, field, wire_model
from .tools import ToolMeta

#: Seconds; read from a number or an ISO 8601 duration ("PT30S"), written as ISO 8601.
IsoDuration = NewType("IsoDuration", float)


@wire_model
class StdioServerParameters:
    command: str
    args: list[str] = empty_list()
    env: dict[str, str] | None = field(default=None, keep_none=True)
    cwd: str | None = field(default=None, keep_none=True)
    encoding: str = "utf-8"
    encoding_error_handler: Literal["strict", "ignore", "replace"] = "strict"


@wire_model
class SseServerParameters:
    url: str
    headers: dict[str, Any] | None = field(default=None, keep_none=True)
    timeout: float = 5.0
    sse_read_timeout: float = 300.0


@wire_model
class StreamableHttpServerParameters:
    url: str
    headers: dict[str, Any] | None = field(default=None, keep_none=True)
    timeout: IsoDuration = IsoDuration(30.0)
    sse_read_timeout: IsoDuration = IsoDuration(300.0)
    terminate_on_close: bool = True


@wire_model
class OAuthOptions:
    """The ``oauth`` block of an sse / streamable server, as a2c-smcp 0.4.2 writes it
    (camelCase); `mode` is checked when the server is configured
    (docs/computer/oauth.md)."""

    #: ``{"type": "authorizationCode", "registration": "dynamic"}`` or another of the five
    #: modes (`computer.config.oauth_mode` reads it).
    mode: dict[str, Any]
    #: The RFC 8707 resource asked for (None: the SDK takes the server's URL).
    resource: str | None = None
    scopes: list[str] = empty_list()
    client_name: str | None = field(default=None, wire="clientName", aliases=("client_name",))


@wire_model
class _ServerConfigBase:
    """Fields every MCP server config has, whatever its transport."""

    #: Display name; several servers may share one (their `bundle_id`s tell them apart).
    name: str
    #: As configured (None: derived from `name`, `protocol.bundle_id`); a Computer's
    #: `get_config` answer always carries the resolved value.
    bundle_id: str | None = None
    disabled: bool = False
    forbidden_tools: list[str] = empty_list()
    tool_meta: dict[str, ToolMeta] = empty_dict()
    default_tool_meta: ToolMeta | None = None
    #: A VRL script run on each tool result (`computer.vrl`; needs ``smcp_sync[vrl]``).
    vrl: str | None = None
    #: A file of ``KEY=VALUE`` lines for a stdio server's environment (`computer.env_file`);
    #: written as ``envFile`` (VS Code's name, as a2c-smcp 0.4.2 reads it).
    env_file: str | None = field(default=None, wire="envFile", aliases=("env_file",))


@wire_model
class StdioServerConfig(_ServerConfigBase):
    server_parameters: StdioServerParameters
    type: Literal["stdio"] = "stdio"


@wire_model
class SseServerConfig(_ServerConfigBase):
    server_parameters: SseServerParameters
    type: Literal["sse"] = "sse"
    #: OAuth 2.1 through the `mcp` SDK's client (docs/computer/oauth.md).
    oauth: OAuthOptions | None = None


@wire_model
class StreamableHttpServerConfig(_ServerConfigBase):
    server_parameters: StreamableHttpServerParameters
    type: Literal["streamable"] = "streamable"
    #: OAuth 2.1 through the `mcp` SDK's client (docs/computer/oauth.md).
    oauth: OAuthOptions | None = None


MCPServerConfig = Union[StdioServerConfig, SseServerConfig, StreamableHttpServerConfig]


@wire_model
class PromptStringInput:
    id: str
    description: str
    type: Literal["promptString"] = "promptString"
    default: str | None = None
    password: bool | None = None


@wire_model
class PickStringOption:
    """A choice shown as `label` whose value is `value` (protocol 0.3.2's object form)."""

    label: str
    value: str


#: A pickString option as written: a plain string, or a label / value object.
PickStringChoice = Union[str, PickStringOption]


@wire_model
class PickStringInput:
    """`options` are plain strings (0.1.x) or `PickStringOption`s (0.3.2+), mixed as written."""

    id: str
    description: str
    type: Literal["pickString"] = "pickString"
    options: list[PickStringChoice] = empty_list()
    default: str | None = None

    @property
    def choices(self) -> list[tuple[str, str]]:
        """Each option as (label, value); a plain string is both."""
        return [(o, o) if isinstance(o, str) else (o.label, o.value) for o in self.options]


@wire_model
class CommandInput:
    id: str
    description: str
    command: str
    type: Literal["command"] = "command"
    args: dict[str, str] | None = None


MCPServerInput = Union[PromptStringInput, PickStringInput, CommandInput]


@wire_model
class GetComputerConfigReq:
    agent: str
    req_id: str
    computer: str


@wire_model
class GetComputerConfigRet:
    #: Keyed by bundle_id (0.1.x Computers key them by name).
    servers: dict[str, MCPServerConfig]
    inputs: list[MCPServerInput] | None = None


# -- wire hooks ------------------------------------------------------------------------

_TIMEDELTA = pydantic.TypeAdapter(datetime.timedelta)


def _structure_duration(value: Any, _: Any) -> float:
    """Seconds from a number or an ISO 8601 duration (what pydantic writes for timedelta)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise WireValueError(f"expected seconds or an ISO 8601 duration, got {type(value).__name__}")
    try:
        return IsoDuration(_TIMEDELTA.validate_python(value).total_seconds())
    except pydantic.ValidationError:
        raise WireValueError(f"invalid duration {shown(value)}; use seconds or ISO 8601 like 'PT30S'") from None


def _unstructure_duration(seconds: float) -> str:
    iso: str = _TIMEDELTA.dump_python(datetime.timedelta(seconds=seconds), mode="json")
    return iso


def _structure_pick_choice(value: Any, _: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return converter.structure(value, PickStringOption)
    raise WireValueError(f"expected a string or a {{label, value}} object, got {type(value).__name__}")


converter.register_structure_hook(IsoDuration, _structure_duration)
converter.register_unstructure_hook(IsoDuration, _unstructure_duration)
converter.register_structure_hook(PickStringChoice, _structure_pick_choice)
register_tagged_union(MCPServerConfig)
register_tagged_union(MCPServerInput)
