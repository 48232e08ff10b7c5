"""Tool results over the inline budget (spec-0.3/events.md §client:tool_call, as a2c-smcp
0.4.2 does it): each binary content item (image, audio, embedded blob resource) whose
decoded bytes exceed the budget keeps its place and `mimeType` but loses its inline bytes,
and its `_meta` names a blob handle (`a2c_blob_handle`, `a2c_total_size`, `a2c_sha256`).
Text stays inline, as in 0.4.2. The result stays a valid MCP CallToolResult.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Callable

from ..protocol.models import (
    META_BLOB_HANDLE,
    META_SHA256,
    META_TOTAL_SIZE,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
)
from ..protocol.models._fields import evolve
from .handles import MintedBlob
from .source import BlobSource, from_bytes

#: Binary items up to this many decoded bytes stay inline (a2c-smcp 0.4.2's default).
DEFAULT_INLINE_BUDGET = 32 * 1024

Mint = Callable[[BlobSource, str], MintedBlob]


def spool_oversize(result: CallToolResult, mint: Mint, budget: int = DEFAULT_INLINE_BUDGET) -> CallToolResult:
    """`result` with every binary item over `budget` moved behind a handle from `mint`
    (called with the source and its MIME type)."""
    content = [_spooled(item, mint, budget) for item in result.content]
    return evolve(result, content=content)


def _spooled(item: Any, mint: Mint, budget: int) -> Any:
    if isinstance(item, (ImageContent, AudioContent)):
        encoded, mime_type = item.data, item.mime_type
    elif isinstance(item, EmbeddedResource) and isinstance(item.resource, BlobResourceContents):
        encoded, mime_type = item.resource.blob, item.resource.mime_type or ""
    else:
        return item
    if len(encoded) // 4 * 3 <= budget:  # cheap bound on the decoded size
        return item
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return item  # not ours to repair: relayed as the tool gave it
    if len(data) <= budget:
        return item
    minted = mint(from_bytes(data), mime_type)
    meta = {**(item.meta or {}), META_BLOB_HANDLE: minted.handle, META_TOTAL_SIZE: len(data),
            META_SHA256: minted.source.sha256}
    if isinstance(item, EmbeddedResource):
        return evolve(item, resource=evolve(item.resource, blob=""), meta=meta)
    return evolve(item, data="", meta=meta)


def blob_items(result: CallToolResult) -> list[Any]:
    """The content items of `result` whose bytes are behind a blob handle."""
    return [item for item in result.content if META_BLOB_HANDLE in (getattr(item, "meta", None) or {})]
