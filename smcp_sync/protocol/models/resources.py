"""Payloads of the extension events (DESIGN §3): read_resource, get_resources, complete."""

from __future__ import annotations

from typing import Any, Literal, Union

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
class GetResourcesReq:
    agent: str
    req_id: str
    computer: str
    mcp_server: str
    cursor: str | None = None


@wire_model
class GetResourcesRet:
    resources: list[Resource]
    req_id: str
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


