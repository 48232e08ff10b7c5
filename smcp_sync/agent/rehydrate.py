"""Blob-backed tool-result items and skill files, filled in at the Agent by itself.

Why: a Computer answers a binary content item over its inline budget (32 KiB) with empty
bytes and a blob handle in its `_meta` (docs/computer/blobs.md), and a large text file of a
skill with a `blob_handle` instead of a `body`; a2c-smcp 0.4.2's Agent fetches them
before returning, so code written for it reads `data` / `body` directly. Ours does too,
by default (docs/computer/blobs.md, *Blobs that arrive by themselves*):

* each blob-backed item of a tool result gets its bytes back, base64 in `data` (image,
  audio) or `resource.blob` (embedded blob resource), its `a2c_blob_handle`,
  `a2c_total_size` and `a2c_sha256` removed from `_meta`, as 0.4.2 does;
* a skill file of a text MIME type answered with a handle gets its `body` (UTF-8),
  `blob_handle` None; a binary one keeps its handle (as 0.4.2);
* the bytes are fetched with `Agent.get_blob` (chunked, sha256 checked), at most
  `max_bytes` per answer: the size the Computer announces is checked before the first
  byte and again with each chunk, so a Computer announcing less than it sends cannot
  make the Agent hold more. An item past the cap, or whose fetch fails (logged), keeps
  its handle for `fetch_result_blobs` / `get_blob` (which can stream to a file).

Opt out per Agent (`Agent(rehydrate_blobs=False)`) or per call (`rehydrate=False`).
`progress(handle, done, total)`, when given, follows each blob as its chunks arrive.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Callable

from ..protocol.errors import SMCPError
from ..protocol.models import META_BLOB_HANDLE, META_SHA256, META_TOTAL_SIZE, CallToolResult, EmbeddedResource
from ..protocol.models._fields import evolve
from ..protocol.models.skills import GetSkillRet
from ..protocol.skill_mime import is_text_mime

logger = logging.getLogger(__name__)

#: Bytes one answer (a tool result, a skill file) is filled in with at most, by default.
DEFAULT_REHYDRATE_MAX_BYTES = 32 * 1024 * 1024

_BLOB_META = (META_BLOB_HANDLE, META_TOTAL_SIZE, META_SHA256)

#: `Agent.get_blob`: (computer, handle, *, progress, timeout) -> bytes.
GetBlob = Callable[..., Any]
#: Called with (blob handle, bytes done, bytes in all) after each chunk of a blob.
BlobProgress = Callable[[str, int, int], Any]


class _OverCap(Exception):
    """The blob is larger than what is left of the cap (raised from get_blob's progress)."""


class Rehydration:
    """An Agent's setting (`enabled`, `max_bytes`, `progress`) and how it fetches (`get_blob`)."""

    def __init__(
        self,
        get_blob: GetBlob,
        enabled: bool = True,
        max_bytes: int = DEFAULT_REHYDRATE_MAX_BYTES,
        progress: BlobProgress | None = None,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"rehydrate_max_bytes must be a whole number of bytes >= 0, not {max_bytes!r}")
        self._get_blob = get_blob
        self.enabled = bool(enabled)
        self.max_bytes = max_bytes
        self.progress = progress

    def wanted(self, rehydrate: bool | None) -> bool:
        """Whether a call with `rehydrate` (None: the Agent's setting) is filled in."""
        return self.enabled if rehydrate is None else bool(rehydrate)

    def result(self, computer: str, result: CallToolResult, timeout: float) -> CallToolResult:
        """`result` with its blob-backed items filled in, within the cap (module doc)."""
        left = self.max_bytes
        content = list(result.content)
        for index, item in enumerate(content):
            meta = getattr(item, "meta", None) or {}
            handle = meta.get(META_BLOB_HANDLE)
            if not isinstance(handle, str):
                continue
            data = self._fetch(computer, handle, meta.get(META_TOTAL_SIZE), left, timeout)
            if data is not None:
                left -= len(data)
                content[index] = _filled(item, meta, data)
        return evolve(result, content=content) if content != list(result.content) else result

    def skill(self, computer: str, answer: GetSkillRet, timeout: float) -> GetSkillRet:
        """A text skill file answered with a handle, with its `body` filled in."""
        if answer.blob_handle is None or not is_text_mime(answer.mime_type):
            return answer
        data = self._fetch(computer, answer.blob_handle, answer.total_size, self.max_bytes, timeout)
        if data is None:
            return answer
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError:
            logger.warning("skill file %s of %r is not UTF-8: kept as a blob handle", answer.rel_path, answer.name)
            return answer
        return evolve(answer, body=body, blob_handle=None)

    def _fetch(self, computer: str, handle: str, announced: Any, allowed: int, timeout: float) -> bytes | None:
        if not isinstance(announced, int) or isinstance(announced, bool) or announced > allowed:
            logger.info("blob %s of %r (%r bytes) is over what is left of the cap (%d): kept as a handle",
                        handle, computer, announced, allowed)
            return None

        def within_cap(done: int, total: int) -> None:
            if total > allowed:
                raise _OverCap()
            if self.progress is not None:
                self.progress(handle, done, total)

        try:
            data: bytes = self._get_blob(computer, handle, progress=within_cap, timeout=timeout)
        except _OverCap:
            logger.warning("blob %s of %r is larger than it was announced: kept as a handle", handle, computer)
            return None
        except SMCPError as exc:
            logger.warning("blob %s of %r could not be fetched, kept as a handle: %s", handle, computer, exc)
            return None
        return data


def _filled(item: Any, meta: dict[str, Any], data: bytes) -> Any:
    encoded = base64.b64encode(data).decode("ascii")
    rest = {key: value for key, value in meta.items() if key not in _BLOB_META} or None
    if isinstance(item, EmbeddedResource):
        return evolve(item, resource=evolve(item.resource, blob=encoded), meta=rest)
    return evolve(item, data=encoded, meta=rest)
