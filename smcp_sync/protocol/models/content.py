"""MCP content structures that travel inside SMCP answers (tool results, resource reads).

They mirror the MCP schema (camelCase wire keys, `_meta`) so a result relayed from an
MCP server reaches the Agent unchanged; `meta` is accepted as well as `_meta` because
SDKs that dump pydantic models without aliases emit it.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Union

from ..codec import WireValueError, converter, register_tagged_union
from ._fields import field, wire_model


def _meta() -> Any:
    """The optional ``_meta`` of MCP (also read as ``meta``)."""
    return field(default=None, wire="_meta", aliases=("meta",))


@wire_model
class Annotations:
    audience: list[str] | None = None
    priority: float | None = None
    last_modified: str | None = field(default=None, wire="lastModified")


@wire_model
class _Annotated:
    """What every MCP content block may carry besides its payload."""

    annotations: Annotations | None = None
    meta: dict[str, Any] | None = _meta()


@wire_model
class TextContent(_Annotated):
    text: str
    type: Literal["text"] = "text"


@wire_model
class ImageContent(_Annotated):
    data: str
    mime_type: str = field(wire="mimeType")
    type: Literal["image"] = "image"


@wire_model
class AudioContent(_Annotated):
    data: str
    mime_type: str = field(wire="mimeType")
    type: Literal["audio"] = "audio"


@wire_model
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | None = field(default=None, wire="mimeType")
    meta: dict[str, Any] | None = _meta()


@wire_model
class BlobResourceContents:
    uri: str
    blob: str
    mime_type: str | None = field(default=None, wire="mimeType")
    meta: dict[str, Any] | None = _meta()


#: Told apart by which of `text` / `blob` is present (MCP defines no tag).
ResourceContents = Union[TextResourceContents, BlobResourceContents]


@wire_model
class EmbeddedResource(_Annotated):
    resource: ResourceContents
    type: Literal["resource"] = "resource"


@wire_model
class Resource(_Annotated):
    """One entry of an MCP server's `resources/list`."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = field(default=None, wire="mimeType")
    size: int | None = None


@wire_model
class ResourceLink(Resource):
    """A content block pointing at a resource (same fields as a listed `Resource`)."""

    type: Literal["resource_link"] = "resource_link"


#: Tagged by `type`.
ContentBlock = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]



def _structure_resource_contents(value: Any, _: Any) -> Any:
    """Resource contents are told apart by which of `blob` and `text` they carry."""
    if isinstance(value, Mapping) and "blob" in value:
        return converter.structure(value, BlobResourceContents)
    if isinstance(value, Mapping) and "text" in value:
        return converter.structure(value, TextResourceContents)
    raise WireValueError("expected resource contents with a 'text' or 'blob' field")


converter.register_structure_hook(ResourceContents, _structure_resource_contents)
register_tagged_union(ContentBlock)
