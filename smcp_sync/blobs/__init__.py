"""Blob transfer (spec-0.3/blob-transfer.md, a2c-smcp 0.4.2's `client:put_blob`): the one
place tool results, skills and uploads get large bytes across in verified chunks.

Producers on the Computer mint a handle for a `BlobSource` (bytes, a file, or a range
reader) bound to an office and an Agent::

    minted = computer.blobs.mint(from_path(p), office_id=office, agent=agent, mime_type="image/png")
    minted.handle, minted.source.size, minted.source.sha256

`client:get_blob` then resolves the handle for its caller and answers chunk by chunk.
"""

from .chunks import chunk_size, read_chunk
from .handles import DEFAULT_HANDLE_TTL, BlobHandles, MintedBlob, not_accessible
from .source import BlobSource, file_sha256, from_bytes, from_path, from_reader, stream_sha256

__all__ = [
    "DEFAULT_HANDLE_TTL",
    "BlobHandles",
    "BlobSource",
    "MintedBlob",
    "chunk_size",
    "file_sha256",
    "stream_sha256",
    "from_bytes",
    "from_path",
    "from_reader",
    "not_accessible",
    "read_chunk",
]
