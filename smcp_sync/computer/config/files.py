"""Reading a Computer configuration in the official Python SDK's JSON format.

Accepted documents (a file path, or the parsed JSON itself):

* one MCP server config object, or a list of them (what the official CLI's
  `--config` file holds; its `--inputs` file holds one input or a list);
* ``{"servers": [...] | {name: config}, "inputs": [...], "roots": [...]}`` — all in one document
  (``mcp_servers`` is read as ``servers``: the official Computer's constructor argument,
  used by the protocol's runtime-contract fixtures). Other keys of such a document are
  reported: the plugin keys of the runtime contract refuse it (smcp_sync has no plugin
  system), any other key is logged as ignored. ``roots`` (an smcp_sync key) lists the
  roots the MCP servers are given (docs/computer/mcp-client.md): ``file://`` URIs, or
  ``{"uri": ..., "name": ...}`` objects.

Server configs stay raw dicts here: their `${input:...}` placeholders are rendered
later, by the Computer, once inputs can be resolved.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Mapping, Sequence

import attrs

from ...protocol.bundle_id import InvalidBundleId, resolve_bundle_id
from ...protocol.codec import from_wire, to_wire
from ...protocol.errors import BadRequestError
from ...protocol.models import MCPServerInput

log = logging.getLogger(__name__)


class ConfigError(BadRequestError):
    """A configuration that cannot be used; the message says where and why."""


@attrs.frozen
class ComputerConfig:
    servers: tuple[dict[str, Any], ...] = ()
    inputs: tuple[MCPServerInput, ...] = ()
    #: The document's ``roots`` as (uri, name) pairs; None: it names none.
    roots: tuple[tuple[str, str | None], ...] | None = None


#: Plugin keys of the runtime contract's Computer documents: refused when they declare anything.
_PLUGIN_KEYS = ("marketplaces", "installedPlugins", "enabledPlugins")
_DOCUMENT_KEYS = frozenset({"servers", "mcp_servers", "inputs", "roots", *_PLUGIN_KEYS})


def load_config(source: Any) -> ComputerConfig:
    """`source`: a path (str / PathLike, "@path" accepted) or an already parsed document."""
    document = read_json(source) if isinstance(source, (str, os.PathLike)) else source
    if isinstance(document, Mapping) and _DOCUMENT_KEYS & set(document):
        _check_document_keys(document)
        servers = _server_list(document.get("servers", document.get("mcp_servers")) or [])
        inputs = load_inputs(document.get("inputs") or [])
        roots = _roots(document["roots"]) if "roots" in document else None
    else:
        servers, inputs, roots = _server_list(document), (), None
    check_unique_bundle_ids(servers)
    return ComputerConfig(servers=tuple(servers), inputs=inputs, roots=roots)


def server_bundle_id(raw: Mapping[str, Any]) -> str:
    """The bundle_id of a raw server config; a `ConfigError` naming the server if its
    explicit `bundle_id` is invalid."""
    try:
        return resolve_bundle_id(raw)
    except InvalidBundleId as exc:
        raise ConfigError(f"MCP server {raw.get('name')!r}: {exc}", details={"field": "bundle_id"}) from None


def check_unique_bundle_ids(servers: Sequence[Any]) -> None:
    """Refuse two MCP servers (config dicts or models) with one bundle_id: the spec's
    no-double-open rule. Display names may repeat."""
    seen: dict[str, Any] = {}
    for server in servers:
        raw = server if isinstance(server, Mapping) else to_wire(server)
        bundle_id = server_bundle_id(raw)
        if bundle_id in seen:
            raise ConfigError(
                f"MCP servers {seen[bundle_id]!r} and {raw.get('name')!r} both have bundle_id {bundle_id!r}; "
                "give one of them another bundle_id",
                details={"field": "bundle_id"},
            )
        seen[bundle_id] = raw.get("name")


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


def _check_document_keys(document: Mapping[str, Any]) -> None:
    for key in _PLUGIN_KEYS:
        if document.get(key):  # an empty declaration asks for nothing: ignored below
            raise ConfigError(
                f"field {key!r} is not supported: smcp_sync has no plugin or marketplace system; "
                "list the MCP servers under 'servers'",
                details={"field": key},
            )
    if "servers" in document and "mcp_servers" in document:
        raise ConfigError("give the MCP servers under 'servers' or 'mcp_servers', not both", details={"field": "servers"})
    for key in sorted(set(document) - _DOCUMENT_KEYS | {k for k in _PLUGIN_KEYS if k in document}):
        log.warning("configuration field %r is not known to smcp_sync; ignored", key)


def _roots(value: Any) -> tuple[tuple[str, str | None], ...]:
    if not isinstance(value, list):
        raise ConfigError("field 'roots' must be a list of file:// URIs or {uri, name} objects", details={"field": "roots"})
    roots = []
    for index, item in enumerate(value):
        uri, name = (item.get("uri"), item.get("name")) if isinstance(item, Mapping) else (item, None)
        if not isinstance(uri, str) or not uri.startswith("file://") or not isinstance(name, (str, type(None))):
            raise ConfigError(
                f"field 'roots[{index}]' must be a file:// URI or an object with a file:// 'uri' and a 'name' string",
                details={"field": f"roots[{index}]"},
            )
        roots.append((uri, name))
    return tuple(roots)


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
