"""Packages served as archives (spec-0.3/skill.md §3 mode B): ``_meta.archive_uri``
downloaded, checked against ``_meta.archive_sha256`` when declared, and unpacked into
memory as (path parts, bytes) for the stager to write.

Bounded at each step (DESIGN: every blocking call has a timeout): http(s) only, the
download within the request timeout and `MAX_ARCHIVE_BYTES`, at most `MAX_UNPACKED_BYTES`
and `MAX_ARCHIVE_MEMBERS` unpacked; only regular files are taken (links and devices are
skipped, never followed), and a path that would leave the package refuses the archive.
"""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
import urllib.request
import zipfile
from pathlib import PurePosixPath
from typing import Any, Callable, Iterator, Mapping

from ...protocol.errors import BadRequestError

#: Bounds of an ``archive`` package: downloaded bytes, unpacked bytes, files.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 10_000


def fetch_archive(meta: Mapping[str, Any], timeout: float) -> tuple[str, Files]:
    """The archive `meta` declares: its sha256 and its files."""
    location, kind, expected = meta.get("archive_uri"), meta.get("archive_format"), meta.get("archive_sha256")
    if not isinstance(location, str) or not location.lower().startswith(("http://", "https://")):
        raise BadRequestError(f"_meta.archive_uri must be an http(s) URL, got {location!r:.200}")
    if kind not in UNPACKERS:
        raise BadRequestError(f"_meta.archive_format must be one of {sorted(UNPACKERS)}, got {kind!r:.50}")
    with urllib.request.urlopen(location, timeout=timeout) as response:  # noqa: S310 - the scheme is checked
        data = response.read(MAX_ARCHIVE_BYTES + 1)
    if len(data) > MAX_ARCHIVE_BYTES:
        raise BadRequestError(f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    digest = hashlib.sha256(data).hexdigest()
    if isinstance(expected, str) and expected.lower() != digest:
        raise BadRequestError(f"the archive's sha256 is {digest}, not the declared {expected:.64}")
    try:
        return digest, UNPACKERS[kind](data)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise BadRequestError(f"the archive cannot be unpacked: {exc}") from None


Files = list[tuple[tuple[str, ...], bytes]]


def _safe_parts(name: str) -> tuple[str, ...]:
    parts = PurePosixPath(name).parts
    if not parts or ".." in parts or PurePosixPath(name).is_absolute() or "\\" in name:
        raise BadRequestError(f"the archive holds a path outside the package: {name!r:.200}")
    return parts


def _unpacked(members: Iterator[tuple[str, int, Callable[[], bytes]]]) -> Files:
    """Regular files only (name, size, read), within the bounds."""
    files: Files = []
    total = 0
    for count, (name, size, read) in enumerate(members, 1):
        total += size
        if count > MAX_ARCHIVE_MEMBERS or total > MAX_UNPACKED_BYTES:
            raise BadRequestError("the archive unpacks to more files or bytes than a package may have")
        files.append((_safe_parts(name), read()))
    return files


def _untar(data: bytes) -> Files:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        return _unpacked((m.name, m.size, functools.partial(_member_bytes, archive, m)) for m in members)


def _member_bytes(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    return (archive.extractfile(member) or io.BytesIO()).read()


def _unzip(data: bytes) -> Files:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [i for i in archive.infolist() if not i.is_dir()]
        return _unpacked((i.filename, i.file_size, functools.partial(archive.read, i)) for i in members)


UNPACKERS = {"tar.gz": _untar, "zip": _unzip}
