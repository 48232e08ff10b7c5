"""Packages served as archives (spec-0.3/skill.md §3 mode B): ``_meta.archive_uri``
downloaded, checked against ``_meta.archive_sha256`` when declared, and unpacked into
memory as (path parts, bytes) for the stager to write.

Bounded at each step (docs/computer/skills.md: every blocking call has a timeout): http(s) only,
the whole download (redirects included) within one deadline — each socket read waits
at most what is left of it — and `MAX_ARCHIVE_BYTES`; unpacked, a package has at most
`MAX_PACKAGE_FILES` entries and `MAX_PACKAGE_BYTES` bytes, counted by a `PackageBudget`
while the members stream by (a tar's headers are not all parsed first, a zip's central
directory is not parsed when it has too many entries), so an archive of a million empty
entries is refused after the first ten thousand; only regular files are taken (links and
devices are skipped, never followed), and a path that would leave the package refuses
the archive.
A download under way ends at once when its `Download` is aborted (the Computer closing).
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import io
import socket
import tarfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import PurePosixPath
from typing import Any, Mapping

from ...protocol.errors import BadRequestError

#: Most bytes of an ``archive`` package's download.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
#: Bounds of a package, unpacked from an archive or served as resources: entries, bytes.
MAX_PACKAGE_FILES = 10_000
MAX_PACKAGE_BYTES = 256 * 1024 * 1024
#: What starts each entry of a zip's central directory.
_ZIP_ENTRY = b"PK\x01\x02"


class PackageBudget:
    """A package's entries and bytes counted as they come: the one past a bound refuses
    the package before it is read."""

    def __init__(self) -> None:
        self.entries = 0
        self.bytes = 0

    def take(self, size: int) -> None:
        self.entries += 1
        self.bytes += size
        check_entries(self.entries)
        if self.bytes > MAX_PACKAGE_BYTES:
            raise BadRequestError(f"the package has more than {MAX_PACKAGE_BYTES} bytes")


def check_entries(count: int) -> None:
    """Refuses a package of `count` entries when that is over `MAX_PACKAGE_FILES`."""
    if count > MAX_PACKAGE_FILES:
        raise BadRequestError(f"the package has more than {MAX_PACKAGE_FILES} entries")
#: Bytes asked of the socket per read.
_PIECE = 64 * 1024


class Download:
    """One archive download's deadline and its sockets: every connect and read waits at
    most what is left of `seconds`, and `abort()` (from another thread) shuts the sockets,
    so a read under way returns at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.aborted = False

    def left(self) -> float:
        left = self._deadline - time.monotonic()
        if self.aborted:
            raise BadRequestError("the archive download was stopped: the Computer is closing")
        if left <= 0:
            raise BadRequestError(f"the archive download took longer than {self.seconds:g} s")
        return left

    def connected(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            aborted = self.aborted
        if aborted:
            sock.shutdown(socket.SHUT_RDWR)

    def before_read(self) -> None:
        """Each socket read from now waits at most what is left of the deadline. A socket
        the response has closed (http.client does once the whole body is read, from
        Python 3.13 on within the read that ends it) has nothing left to bound."""
        left = self.left()
        with self._lock:
            for sock in self._sockets:
                if sock.fileno() != -1:
                    sock.settimeout(left)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass


class _TimedConnection(http.client.HTTPConnection):
    """Connects within what is left of its `Download`, and tells it its socket."""

    def __init__(self, *args: Any, download: Download, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._download = download

    def connect(self) -> None:
        self.timeout = self._download.left()
        super().connect()
        self._download.connected(self.sock)


class _TimedHTTPSConnection(_TimedConnection, http.client.HTTPSConnection):
    pass


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, download: Download) -> None:
        super().__init__()
        self._download = download

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_TimedConnection, download=self._download), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, download: Download) -> None:
        super().__init__()
        self._download = download

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_TimedHTTPSConnection, download=self._download), req)


class _NoFTP(urllib.request.FTPHandler):
    """A redirect to ftp:// is refused: only http(s) downloads have a deadline."""

    def ftp_open(self, req: urllib.request.Request) -> Any:
        raise urllib.error.URLError("only http and https archive URLs are fetched")


def _download(location: str, download: Download) -> bytes:
    """The body at `location`: at most `MAX_ARCHIVE_BYTES`, all of it within the deadline
    (redirects followed as urllib does, on connections of the same deadline)."""
    opener = urllib.request.build_opener(_HTTP(download), _HTTPS(download), _NoFTP())
    received = bytearray()
    with opener.open(location, timeout=download.left()) as response:
        while True:
            download.before_read()
            piece = response.read1(_PIECE)
            if not piece:
                download.left()  # an abort ends a read like the end of the body: not taken for it
                return bytes(received)
            received += piece
            if len(received) > MAX_ARCHIVE_BYTES:
                raise BadRequestError(f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")


def fetch_archive(meta: Mapping[str, Any], download: Download) -> tuple[str, Files]:
    """The archive `meta` declares: its sha256 and its files."""
    location, kind, expected = meta.get("archive_uri"), meta.get("archive_format"), meta.get("archive_sha256")
    if not isinstance(location, str) or not location.lower().startswith(("http://", "https://")):
        raise BadRequestError(f"_meta.archive_uri must be an http(s) URL, got {location!r:.200}")
    if kind not in UNPACKERS:
        raise BadRequestError(f"_meta.archive_format must be one of {sorted(UNPACKERS)}, got {kind!r:.50}")
    try:
        data = _download(location, download)
    except (OSError, http.client.HTTPException) as exc:
        download.left()  # aborted or past the deadline: says so rather than how the socket failed
        if isinstance(exc, OSError):
            raise
        raise BadRequestError(f"the archive download failed: {type(exc).__name__}") from None
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


def _untar(data: bytes) -> Files:
    """Streamed: each header is counted as it is read, and the archive refused at the
    first one past the bounds."""
    files: Files = []
    budget = PackageBudget()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|gz") as archive:
        for member in archive:
            budget.take(member.size if member.isfile() else 0)
            if member.isfile():
                files.append((_safe_parts(member.name), (archive.extractfile(member) or io.BytesIO()).read()))
    return files


def _unzip(data: bytes) -> Files:
    """The central directory is parsed whole when the archive is opened: its entries are
    counted first (each starts with a signature; a signature inside a name only counts
    one too many)."""
    check_entries(data.count(_ZIP_ENTRY))
    files: Files = []
    budget = PackageBudget()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            budget.take(0 if info.is_dir() else info.file_size)
            if not info.is_dir():
                files.append((_safe_parts(info.filename), archive.read(info)))
    return files


UNPACKERS = {"tar.gz": _untar, "zip": _unzip}
