"""The Computer's registry of blob handles (spec-0.3/blob-transfer.md §1).

A handle is an opaque random token (nothing in it can be decoded into a path), valid for
a bounded time and only for the office and Agent it was minted for: any other caller,
a forged token and an expired one all get 4018 without a byte of the source. Expired
handles are dropped when handles are minted or looked up, and the oldest ones when more
than `max_handles` live or their in-memory bytes pass `max_memory`; dropped tokens are
remembered (a bounded number) so a late reader learns "gone" rather than "invalid".
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from typing import Callable

import attrs

from ..protocol.errors import BlobError, ErrorCode
from .source import BlobSource

#: How long a handle stays readable after it was minted, by default (seconds).
DEFAULT_HANDLE_TTL = 600.0
#: Live handles kept at most; minting one more drops the oldest.
DEFAULT_MAX_HANDLES = 1024
#: Bytes of in-memory sources (e.g. tool results) kept at most; the oldest go first.
DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
_REMEMBERED_EXPIRED = 4096
_PREFIX = "blob_"


@attrs.frozen
class MintedBlob:
    """What a handle stands for, and for whom."""

    handle: str
    source: BlobSource
    mime_type: str
    office_id: str | None
    agent: str
    expires_at: float


def not_accessible(reason: str, message: str) -> BlobError:
    """The 4018 of blob-transfer.md §4 (`reason`: invalid_handle / forbidden / gone / range)."""
    return BlobError(message, code=ErrorCode.BLOB_NOT_ACCESSIBLE, details={"reason": reason})


class BlobHandles:
    """Thread-safe; `clock` is injectable for tests of expiry."""

    def __init__(
        self,
        ttl: float = DEFAULT_HANDLE_TTL,
        max_handles: int = DEFAULT_MAX_HANDLES,
        max_memory: int = DEFAULT_MAX_MEMORY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not ttl > 0 or max_handles < 1:
            raise ValueError("a blob handle registry needs ttl > 0 and max_handles >= 1")
        self._ttl = ttl
        self._max_handles = max_handles
        self._max_memory = max_memory
        self._memory = 0
        self._clock = clock
        self._lock = threading.Lock()
        self._live: collections.OrderedDict[str, MintedBlob] = collections.OrderedDict()
        self._expired: collections.deque[str] = collections.deque(maxlen=_REMEMBERED_EXPIRED)

    def mint(self, source: BlobSource, *, office_id: str | None, agent: str, mime_type: str) -> MintedBlob:
        """A new handle for `source`, readable by `agent` in `office_id` only (None: a
        Computer in no office, whose handles no routed request can match)."""
        handle = _PREFIX + secrets.token_urlsafe(32)
        memory = source.size if source.in_memory else 0
        with self._lock:
            self._drop_expired()
            while self._live and (
                len(self._live) >= self._max_handles or self._memory + memory > self._max_memory
            ):
                self._drop(next(iter(self._live)))
            minted = MintedBlob(handle, source, mime_type or "application/octet-stream", office_id, agent,
                                self._clock() + self._ttl)
            self._live[handle] = minted
            self._memory += memory
        return minted

    def resolve(self, handle: str, *, office_id: str | None, agent: str) -> MintedBlob:
        """The blob behind `handle` for this caller, or 4018."""
        with self._lock:
            self._drop_expired()
            minted = self._live.get(handle)
            if minted is None:
                if handle in self._expired:
                    raise not_accessible("gone", "the blob handle has expired")
                raise not_accessible("invalid_handle", "unknown blob handle")
        if minted.office_id != office_id or minted.agent != agent:
            raise not_accessible("forbidden", "this blob handle was not issued to this agent in this office")
        return minted

    def discard(self, handle: str) -> None:
        with self._lock:
            if handle in self._live:
                self._drop(handle)

    def _drop_expired(self) -> None:
        now = self._clock()
        while self._live:
            handle, oldest = next(iter(self._live.items()))
            if oldest.expires_at > now:
                return
            self._drop(handle)

    def _drop(self, handle: str) -> None:
        """(lock held) Forget a live handle, remembering its token as gone."""
        source = self._live.pop(handle).source
        if source.in_memory:
            self._memory -= source.size
        self._expired.append(handle)
