"""Packages served as archives (spec-0.3/skill.md §3 mode B): ``_meta.archive_uri``
downloaded, checked against ``_meta.archive_sha256`` when declared, and unpacked into
memory as (path parts, bytes) for the stager to write.

Bounded at each step (README, Skills: every blocking call has a timeout): http(s) only,
the whole download (redirects included) within one deadline — each socket read waits
at most what is left of it — and `MAX_ARCHIVE_BYTES`, at most `MAX_UNPACKED_BYTES` and
`MAX_ARCHIVE_MEMBERS` unpacked; only regular files are taken (links and devices are
skipped, never followed), and a path that would leave the package refuses the archive.
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
from typing import Any, Callable, Iterator, Mapping

from ...protocol.errors import BadRequestError

#: Bounds of an ``archive`` package: downloaded bytes, unpacked bytes, files.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 10_000
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
        """Each socket read from now waits at most what is left of the deadline."""
        left = self.left()
        with self._lock:
            for sock in self._sockets:
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
