"""A byte source a blob handle stands for: its size, a range reader and its sha256.

Three kinds feed the same reader: bytes in memory, a file on disk, or a callable that
reads a range (for producers that hold their bytes elsewhere). The sha256 is computed
once, by reading the source in pieces, so a large file is never held whole.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import BinaryIO, Callable

#: Size of the pieces the sha256 is computed over.
_HASH_PIECE = 1024 * 1024

RangeReader = Callable[[int, int], bytes]


class BlobSource:
    """`size` bytes readable by range; `read(offset, length)` may return fewer bytes
    only at the end. Raises `OSError` when the bytes are no longer there."""

    def __init__(self, size: int, read: RangeReader, sha256: str | None = None, *, in_memory: bool = False) -> None:
        if size < 0:
            raise ValueError(f"a blob source cannot have a negative size ({size})")
        self.size = size
        #: Whether the bytes are held in memory (they count against `BlobHandles.max_memory`).
        self.in_memory = in_memory
        self._read = read
        self._sha256 = sha256
        self._hash_lock = threading.Lock()

    def read(self, offset: int, length: int) -> bytes:
        return self._read(offset, max(0, min(length, self.size - offset)))

    @property
    def sha256(self) -> str:
        """Hex sha256 of the whole source (computed on first use, then kept)."""
        with self._hash_lock:
            if self._sha256 is None:
                digest = hashlib.sha256()
                for offset in range(0, self.size, _HASH_PIECE):
                    digest.update(self.read(offset, _HASH_PIECE))
                self._sha256 = digest.hexdigest()
            return self._sha256


def from_bytes(data: bytes) -> BlobSource:
    view = bytes(data)
    return BlobSource(len(view), lambda offset, length: view[offset : offset + length], in_memory=True)


def from_path(path: str | os.PathLike[str]) -> BlobSource:
    """The file as it is now; its sha256 is taken at once, so a later rewrite is noticed
    by the reader (`read` fails with `OSError` once the size no longer matches)."""
    location = os.fspath(path)
    size = os.stat(location).st_size

    def read(offset: int, length: int) -> bytes:
        with open(location, "rb") as file:
            if os.fstat(file.fileno()).st_size != size:
                raise OSError(f"{location} changed size since it was offered")
            file.seek(offset)
            return file.read(length)

    source = BlobSource(size, read)
    source.sha256  # noqa: B018 - fix the digest of the bytes offered now
    return source


def from_reader(size: int, read: RangeReader, sha256: str | None = None, *, in_memory: bool = False) -> BlobSource:
    """`in_memory`: `read` serves bytes the producer holds in memory (they count against
    `BlobHandles.max_memory`)."""
    return BlobSource(size, read, sha256, in_memory=in_memory)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in pieces: a large file is never held whole."""
    with open(path, "rb") as file:
        return stream_sha256(file)


def stream_sha256(file: BinaryIO) -> str:
    """Hex sha256 of what is left to read of an open binary file, read in pieces."""
    digest = hashlib.sha256()
    for piece in iter(lambda: file.read(_HASH_PIECE), b""):
        digest.update(piece)
    return digest.hexdigest()
