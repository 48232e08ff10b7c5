"""Payloads of the resource events: `client:get_resources` (protocol 0.4, a2c-smcp 0.4.2's
shape) and the extension events of docs/ARCHITECTURE.md, Wire decisions, `read_resource` and `complete`."""

from __future__ import annotations

from typing import Any, Literal, Union

from ..codec import register_tagged_union
from ._fields import empty_list, field, wire_model
from .content import Resource, ResourceContents


@wire_model
class ReadResourceReq:
    agent: str
    req_id: str
    computer: str
    uri: str
    #: Needed only for URIs that are neither `dpe://` nor `window://`.
    mcp_server: str | None = None


@wire_model
class ReadResourceRet:
    contents: list[ResourceContents]
    req_id: str


@wire_model
class ResourceAnnotations:
    """MCP resource annotations with snake_case keys (a2c-smcp 0.4.2)."""

    audience: list[str] | None = None
    #: In [0, 1].
    priority: float | None = None
    last_modified: str | None = field(default=None, aliases=("lastModified",))


@wire_model
class A2CResource:
    """One entry of `client:get_resources`: an MCP `Resource` with snake_case keys, as
    a2c-smcp 0.4.2 sends it (`title` and `icons` are not part of it). Readers also take
    the camelCase MCP keys (`mimeType`, `lastModified`) that smcp_sync 0.x sent."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = field(default=None, aliases=("mimeType",))
    size: int | None = None
    annotations: ResourceAnnotations | None = None
    #: A2C extensions such as `fullscreen`; also read from `meta`.
    meta: dict[str, Any] | None = field(default=None, wire="_meta", aliases=("meta",))


def a2c_resource(resource: Resource) -> A2CResource:
    """A listed MCP resource as a `client:get_resources` entry."""
    annotations = resource.annotations
    return A2CResource(
        uri=resource.uri,
        name=resource.name,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
        annotations=None
        if annotations is None
        else ResourceAnnotations(
            audience=annotations.audience, priority=annotations.priority, last_modified=annotations.last_modified
        ),
        meta=resource.meta,
    )


@wire_model
class GetResourcesReq:
    agent: str
    req_id: str
    computer: str
    #: The MCP server's bundle_id.
    mcp_server: str
    cursor: str | None = None


@wire_model
class GetResourcesRet:
    resources: list[A2CResource]
    req_id: str
    #: Absent on the last page.
    next_cursor: str | None = None


@wire_model
class ResourceTemplateReference:
    uri: str
    type: Literal["ref/resource"] = "ref/resource"


@wire_model
class PromptReference:
    name: str
    type: Literal["ref/prompt"] = "ref/prompt"


CompletionReference = Union[ResourceTemplateReference, PromptReference]
register_tagged_union(CompletionReference)


@wire_model
class CompletionArgument:
    name: str
    value: str


@wire_model
class CompletionContext:
    arguments: dict[str, str] | None = None


@wire_model
class CompleteReq:
    agent: str
    req_id: str
    computer: str
    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None
    #: Needed for prompt references (resource templates route by URI host).
    mcp_server: str | None = None


@wire_model
class Completion:
    values: list[str] = empty_list()
    total: int | None = None
    has_more: bool | None = field(default=None, wire="hasMore")


@wire_model
class CompleteRet:
    completion: Completion
    req_id: str


