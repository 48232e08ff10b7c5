"""Payloads of blob transfer: `client:get_blob` (spec-0.3/blob-transfer.md §2) and
`client:put_blob` (a2c-smcp 0.4.2), plus the `_meta` keys a tool result's content item
carries when its bytes went into a blob handle instead."""

from __future__ import annotations

from ._fields import wire_model

#: `_meta` keys of a CallToolResult content item whose bytes are behind a handle.
META_BLOB_HANDLE = "a2c_blob_handle"
META_TOTAL_SIZE = "a2c_total_size"
META_SHA256 = "a2c_sha256"


@wire_model
class GetBlobReq:
    agent: str
    req_id: str
    computer: str
    blob_handle: str
    #: Absolute byte offset into the resource.
    chunk_offset: int = 0
    #: The Agent's wish; the Computer clamps it.
    max_chunk_bytes: int | None = None


@wire_model
class GetBlobRet:
    blob_handle: str
    mime_type: str
    total_size: int
    #: Hex sha256 of the whole resource (the same for every chunk).
    sha256: str
    chunk_offset: int
    eof: bool
    #: Base64 of this chunk's bytes.
    blob: str
    req_id: str


@wire_model
class PutBlobReq:
    """One chunk of an upload; the first (no `upload_id`) declares size and sha256."""

    agent: str
    req_id: str
    computer: str
    chunk_offset: int
    eof: bool
    blob: str
    upload_id: str | None = None
    total_size: int | None = None
    sha256: str | None = None
    name_hint: str | None = None


@wire_model
class PutBlobRet:
    upload_id: str
    chunk_offset: int
    req_id: str
    #: Only in the answer to the last chunk: where the file landed, its size and sha256.
    landing_path: str | None = None
    total_size: int | None = None
    sha256: str | None = None
