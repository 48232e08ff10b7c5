"""`client:put_blob` on the Computer: bounded upload sessions into the landing folder
(a2c-smcp 0.4.2; errors are its 4019 reasons).

The first chunk (no `upload_id`) declares `total_size` and `sha256` and opens a session
bound to the office and Agent that sent it; later chunks must come in order. Bytes go to
a `.part` file in the landing folder, hashed as they arrive; the last chunk checks size
and sha256 and renames the part to its final, sanitized name. A session idle longer than
`idle_timeout` is dropped with its part by a sweeper thread that runs while sessions are
open and is stopped by `close()`. Parts no session of ours writes (an upload cut short
by a crash) are collected by `collect_stale` once nothing wrote them for `idle_timeout`:
when the Computer starts, and at each pass of the sweeper.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Callable

from ..protocol.errors import BlobError, ErrorCode
from ..protocol.models import PutBlobReq, PutBlobRet
from .landing import LandingFolder

log = logging.getLogger(__name__)

#: Largest upload accepted by default (bytes).
DEFAULT_UPLOAD_MAX_BYTES = 1024 * 1024 * 1024
#: Seconds an upload may wait for its next chunk before it is dropped.
DEFAULT_UPLOAD_IDLE_TIMEOUT = 120.0
#: Uploads in progress at once, at most.
DEFAULT_UPLOAD_MAX_CONCURRENT = 4
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def write_failed(reason: str, message: str) -> BlobError:
    """The 4019 of a2c-smcp 0.4.2 (`reason`: forbidden / invalid_declaration / too_large /
    busy / invalid_upload / range / integrity / io_error)."""
    return BlobError(message, code=ErrorCode.BLOB_WRITE_FAILED, details={"reason": reason})


class _Session:
    def __init__(self, upload_id: str, owner: tuple[str | None, str], total_size: int, sha256: str,
                 part: Path, final: Path, now: float) -> None:
        self.upload_id = upload_id
        self.owner = owner
        self.total_size = total_size
        self.sha256 = sha256
        self.part = part
        self.final = final
        self.received = 0
        self.digest = hashlib.sha256()
        self.file = open(part, "wb")  # noqa: SIM115 - closed by finish() or drop()
        self.last_active = now
        self.lock = threading.RLock()
        self.dropped = False

    def drop(self) -> None:
        with self.lock:  # after a chunk being written
            self.dropped = True
            self.file.close()
            try:
                self.part.unlink()
            except FileNotFoundError:
                pass


class Uploads:
    """Thread-safe. `landing`: the folder uploads land in (None: uploads refused)."""

    def __init__(
        self,
        landing: str | os.PathLike[str] | None,
        max_bytes: int = DEFAULT_UPLOAD_MAX_BYTES,
        idle_timeout: float = DEFAULT_UPLOAD_IDLE_TIMEOUT,
        max_concurrent: int = DEFAULT_UPLOAD_MAX_CONCURRENT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._landing = None if landing is None else LandingFolder(landing)
        self._max_bytes = max_bytes
        self._idle_timeout = idle_timeout
        self._max_concurrent = max_concurrent
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    def receive(self, request: PutBlobReq, office_id: str | None, agent: str) -> PutBlobRet:
        """Take one chunk; the answer to the last one says where the file landed."""
        owner = (office_id, agent)
        session = self._open(request, owner) if request.upload_id is None else self._find(request, owner)
        with session.lock:
            try:
                return self._append(session, request)
            except BlobError:
                self._forget(session)
                raise

    def expire(self) -> int:
        """Drop the sessions idle longer than the timeout; how many were dropped."""
        now = self._clock()
        with self._lock:
            stale = [s for s in self._sessions.values() if now - s.last_active >= self._idle_timeout]
        for session in stale:
            log.info("upload %s expired after %g s without a chunk", session.upload_id, self._idle_timeout)
            self._forget(session)
        return len(stale)

    def collect_stale(self) -> int:
        """Remove the parts of the landing folder that no upload of ours writes and that
        nothing wrote for `idle_timeout` seconds (uploads cut short by a crash, of this
        Computer or of one sharing the folder, whose uploads would have expired by now);
        how many were removed."""
        if self._landing is None:
            return 0
        with self._lock:
            ours = {session.part.name for session in self._sessions.values()}
        cutoff = time.time() - self._idle_timeout
        removed = 0
        try:
            entries = list(os.scandir(self._landing.parts))
        except OSError:  # no parts folder yet, or unreadable: nothing to collect
            return 0
        for entry in entries:
            if not entry.name.endswith(".part") or entry.name in ours:
                continue
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:  # removed meanwhile, or not ours to remove
                continue
        if removed:
            log.info("removed %d stale partial upload(s) from the landing folder", removed)
        return removed

    def close(self, timeout: float = 5.0) -> None:
        """Stop the sweeper and drop every unfinished upload."""
        self._stop.set()
        with self._lock:
            sweeper, sessions = self._sweeper, list(self._sessions.values())
        if sweeper is not None:
            sweeper.join(timeout)
        for session in sessions:
            self._forget(session)

    # -- sessions ---------------------------------------------------------------------

    def _open(self, request: PutBlobReq, owner: tuple[str | None, str]) -> _Session:
        if self._landing is None:
            raise write_failed("forbidden", "this Computer has no landing folder: uploads are refused")
        total, sha256 = request.total_size, (request.sha256 or "").lower()
        if total is None or total < 1:
            raise write_failed("invalid_declaration", "the first chunk must declare total_size >= 1 @ $.total_size")
        if not _SHA256_HEX.match(sha256):
            raise write_failed("invalid_declaration", "the first chunk must declare a hex sha256 @ $.sha256")
        if total > self._max_bytes:
            raise write_failed("too_large", f"total_size {total} is over this Computer's cap of {self._max_bytes}")
        if request.chunk_offset != 0:
            raise write_failed("range", "the first chunk must start at chunk_offset 0")
        upload_id = secrets.token_hex(16)
        with self._lock:
            if self._stop.is_set():
                raise write_failed("forbidden", "this Computer is closing")
            if len(self._sessions) >= self._max_concurrent:
                raise write_failed("busy", f"{self._max_concurrent} uploads are already in progress")
            try:
                self._landing.prepare()
                session = _Session(upload_id, owner, total, sha256, self._landing.part_path(upload_id),
                                   self._landing.final_path(upload_id, request.name_hint), self._clock())
            except OSError as exc:
                log.warning("cannot start an upload in %s: %s", self._landing.root, exc)
                raise write_failed("io_error", "the landing folder is not writable") from None
            self._sessions[upload_id] = session
            self._start_sweeper()
        return session

    def _find(self, request: PutBlobReq, owner: tuple[str | None, str]) -> _Session:
        with self._lock:
            session = self._sessions.get(request.upload_id or "")
        if session is None or session.owner != owner:
            raise write_failed("invalid_upload", "unknown or expired upload_id")
        if request.total_size is not None or request.sha256 is not None or request.name_hint is not None:
            self._forget(session)
            raise write_failed("invalid_declaration", "only the first chunk may declare total_size, sha256, name_hint")
        return session

    def _append(self, session: _Session, request: PutBlobReq) -> PutBlobRet:
        if session.dropped:
            raise write_failed("invalid_upload", "unknown or expired upload_id")
        if request.chunk_offset != session.received:
            raise write_failed("range", f"chunk_offset {request.chunk_offset} is not the {session.received} bytes received")
        try:
            data = base64.b64decode(request.blob, validate=True)
        except (binascii.Error, ValueError):
            raise write_failed("invalid_declaration", "blob is not valid base64 @ $.blob") from None
        end = session.received + len(data)
        if end > session.total_size or (request.eof and end != session.total_size):
            raise write_failed("range", f"{end} bytes do not match the declared total_size {session.total_size}")
        try:
            session.file.write(data)
        except OSError:
            raise write_failed("io_error", "writing the upload failed") from None
        session.digest.update(data)
        session.received = end
        session.last_active = self._clock()
        answer = PutBlobRet(upload_id=session.upload_id, chunk_offset=request.chunk_offset, req_id=request.req_id)
        if not request.eof:
            return answer
        return self._finish(session, answer)

    def _finish(self, session: _Session, answer: PutBlobRet) -> PutBlobRet:
        digest = session.digest.hexdigest()
        if digest != session.sha256:
            raise write_failed("integrity", "the bytes received do not have the declared sha256")
        try:
            session.file.close()
            os.replace(session.part, session.final)
        except OSError:
            raise write_failed("io_error", "finishing the upload failed") from None
        with self._lock:
            self._sessions.pop(session.upload_id, None)
        log.info("upload %s landed: %d bytes", session.upload_id, session.received)
        return PutBlobRet(upload_id=answer.upload_id, chunk_offset=answer.chunk_offset, req_id=answer.req_id,
                          landing_path=str(session.final), total_size=session.received, sha256=digest)

    def _forget(self, session: _Session) -> None:
        with self._lock:
            self._sessions.pop(session.upload_id, None)
        session.drop()

    # -- sweeper ----------------------------------------------------------------------

    def _start_sweeper(self) -> None:
        """(lock held) Run the sweeper while there are sessions."""
        if self._sweeper is None:
            self._sweeper = threading.Thread(target=self._sweep, name="smcp-upload-sweeper", daemon=True)
            self._sweeper.start()

    def _sweep(self) -> None:
        interval = max(0.05, min(self._idle_timeout / 4, 5.0))
        while not self._stop.wait(interval):
            self.expire()
            self.collect_stale()
            with self._lock:
                if not self._sessions:
                    self._sweeper = None
                    return
