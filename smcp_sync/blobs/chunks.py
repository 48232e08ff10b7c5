"""Cutting a blob into `client:get_blob` answers that fit one Socket.IO message.

A chunk's base64 grows it by 4/3, and the answer's envelope (handle, sha256, ids, the
Socket.IO ack framing) adds a little more; the chunk size is clamped so the serialized
answer stays under the Server's `max_http_buffer_size` (blob-transfer.md §2 step 5).
"""

from __future__ import annotations

import base64

from ..protocol.models import GetBlobRet
from .handles import MintedBlob, not_accessible

#: Largest chunk a Computer sends, whatever the Agent asks for (raw bytes).
DEFAULT_CHUNK_CAP = 256 * 1024
#: The Server limit assumed when the Server did not announce one (python-socketio's default).
ASSUMED_MESSAGE_LIMIT = 1_000_000
#: Room left for everything in an answer but the base64 of the chunk (characters).
ENVELOPE_ALLOWANCE = 4096


def chunk_size(requested: int | None, message_limit: int | None, cap: int = DEFAULT_CHUNK_CAP) -> int:
    """Raw bytes per chunk: the Agent's wish, clamped to `cap` and to what fits a message."""
    limit = message_limit or ASSUMED_MESSAGE_LIMIT
    fits = max(1, (limit - ENVELOPE_ALLOWANCE) // 4 * 3)
    size = min(cap, fits)
    if requested is not None and requested > 0:
        size = min(size, requested)
    return size


def read_chunk(minted: MintedBlob, offset: int, size: int, req_id: str) -> GetBlobRet:
    """The answer for the chunk of `minted` at `offset` (4018 range past the end, gone
    when the source can no longer be read)."""
    source = minted.source
    if offset < 0 or offset > source.size:
        raise not_accessible("range", f"chunk_offset {offset} is outside 0..{source.size}")
    try:
        data = source.read(offset, size)
        digest = source.sha256
    except OSError:
        raise not_accessible("gone", "the blob's source can no longer be read") from None
    return GetBlobRet(
        blob_handle=minted.handle,
        mime_type=minted.mime_type,
        total_size=source.size,
        sha256=digest,
        chunk_offset=offset,
        eof=offset + len(data) >= source.size,
        blob=base64.b64encode(data).decode("ascii"),
        req_id=req_id,
    )
