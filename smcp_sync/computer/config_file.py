"""Reading a Computer configuration in the official Python SDK's JSON format.

Accepted documents (a file path, or the parsed JSON itself):

* one MCP server config object, or a list of them (what the official CLI's
  `--config` file holds; its `--inputs` file holds one input or a list);
* ``{"servers": [...] | {name: config}, "inputs": [...]}`` — both in one document.

Server configs stay raw dicts here: their `${input:...}` placeholders are rendered
later, by the Computer, once inputs can be resolved.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

import attrs

from ..protocol.codec import from_wire
from ..protocol.errors import BadRequestError
from ..protocol.models import MCPServerInput

class ConfigError(BadRequestError):
    """A configuration that cannot be used; the message says where and why."""


@attrs.frozen
class ComputerConfig:
    servers: tuple[dict[str, Any], ...] = ()
    inputs: tuple[MCPServerInput, ...] = ()


def load_config(source: Any) -> ComputerConfig:
    """`source`: a path (str / PathLike, "@path" accepted) or an already parsed document."""
    document = read_json(source) if isinstance(source, (str, os.PathLike)) else source
    if isinstance(document, Mapping) and "servers" in document:
        servers = _server_list(document["servers"])
        inputs = load_inputs(document.get("inputs") or [])
    else:
        servers, inputs = _server_list(document), ()
    check_unique_names(servers)
    return ComputerConfig(servers=tuple(servers), inputs=inputs)


def check_unique_names(servers: Sequence[Any]) -> None:
    """Refuse repeated MCP server names (config dicts or models)."""
    names = [server.get("name") if isinstance(server, Mapping) else server.name for server in servers]
    repeated = sorted({name for name in names if isinstance(name, str) and names.count(name) > 1})
    if repeated:
        raise ConfigError(f"MCP server names must be unique; repeated: {repeated}")


def load_inputs(source: Any) -> tuple[MCPServerInput, ...]:
    """Input definitions from a path, one definition, or a list of them."""
    document = read_json(source) if isinstance(source, (str, os.PathLike)) else source
    items = document if isinstance(document, Sequence) and not isinstance(document, str) else [document]
    return tuple(from_wire(MCPServerInput, item) for item in items)


def read_json(path: str | os.PathLike[str]) -> Any:
    # the official CLI accepts "@file" as well as a plain path
    text_path = os.fspath(path)
    if text_path.startswith("@"):
        text_path = text_path[1:]
    try:
        with open(text_path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {text_path!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"configuration file {text_path!r} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def _server_list(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, Mapping) and "name" not in value and "type" not in value:
        # {name: config} — the name comes from the key
        return [{"name": name, **_object(config, name)} for name, config in value.items()]
    items = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
    return [_object(item, f"servers[{index}]") for index, item in enumerate(items)]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"MCP server config {where} must be a JSON object, got {type(value).__name__}")
    return dict(value)
