"""Moving large bytes between the Agent and a Computer (`client:get_blob`,
`client:put_blob`): chunk by chunk, never holding a file whole, sha256 checked.

A download whose `sha256` or `total_size` changes between chunks (the source was
rewritten), or whose bytes do not hash to the announced sha256, is read again from
offset 0 once; failing again it raises `BlobError` 4018 with `details.reason`
"integrity" (a reason of ours, found by the Agent, never sent by a Computer). A chunk
that starts or ends past the announced `total_size` is refused at once with 4018
"range": a hostile Computer cannot make the Agent hold more than the size it announced.

A download to a file goes to a temporary file beside it, moved into place
(`os.replace`) only once the sha256 matched: a failed download leaves an existing file
as it was.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import contextlib
import os
import stat
import uuid
from pathlib import Path
from typing import IO, Any, Callable, Union

from ..blobs import chunk_size, file_sha256
from ..blobs.tool_results import blob_items
from .transport import AgentTransport
from ..protocol import events
from ..protocol.errors import BlobError, ErrorCode, InternalError
from ..protocol.models import (
    META_BLOB_HANDLE,
    CallToolResult,
    GetBlobReq,
    GetBlobRet,
    PutBlobReq,
    PutBlobRet,
)
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id

#: Called with (bytes done, bytes in all) after each chunk.
Progress = Callable[[int, int], Any]
PathLike = Union[str, "os.PathLike[str]"]
_READS = 2


class _Changed(Exception):
    """The source changed during a download: start again."""


class BlobMethods:
    """The Agent's blob requests (a mixin: needs the Agent's `name` and `_connection`)."""

    name: str
    _connection: AgentTransport

    def get_blob(
        self,
        computer: str,
        handle: str,
        path: PathLike | None = None,
        *,
        progress: Progress | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> bytes | Path:
        """The bytes behind `handle` on `computer`, sha256 checked: streamed into the file
        `path` (returned; replaced only by a complete, checked download, left as it was
        if the download fails) or returned as bytes. `timeout` bounds each chunk's request."""
        for attempt in range(_READS):
            target = _Sink(path)
            try:
                self._download(computer, handle, target, progress, timeout)
                return target.result()
            except _Changed as exc:
                target.discard()
                if attempt == _READS - 1:
                    raise BlobError(str(exc), code=ErrorCode.BLOB_NOT_ACCESSIBLE,
                                    details={"reason": "integrity"}) from None
            except BaseException:
                target.discard()
                raise
        raise AssertionError("unreachable")

    def fetch_result_blobs(
        self,
        computer: str,
        result: CallToolResult,
        directory: PathLike | None = None,
        *,
        progress: Progress | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> list[bytes | Path]:
        """The bytes of every content item of a tool result from `computer` that came
        as a blob handle (`_meta.a2c_blob_handle`), in content order: bytes, or files in
        `directory` named after their handles."""
        fetched: list[bytes | Path] = []
        for item in blob_items(result):
            handle = item.meta[META_BLOB_HANDLE]
            path = None if directory is None else Path(directory) / _file_name(handle)
            fetched.append(self.get_blob(computer, handle, path, progress=progress, timeout=timeout))
        return fetched

    def put_blob(
        self,
        computer: str,
        source: PathLike | bytes,
        *,
        name_hint: str | None = None,
        progress: Progress | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> PutBlobRet:
        """Upload a file (streamed) or bytes to `computer`'s landing folder; the answer
        to the last chunk says where it landed (`landing_path`) and its sha256, checked
        against ours. A file's name is the default `name_hint`."""
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            size, digest = len(data), hashlib.sha256(data).hexdigest()
            opened: Callable[[], IO[bytes]] = lambda: io.BytesIO(data)  # noqa: E731
        else:
            file_path = Path(source)
            size, digest = file_path.stat().st_size, file_sha256(file_path)
            opened = lambda: open(file_path, "rb")  # noqa: E731, SIM115
            name_hint = file_path.name if name_hint is None else name_hint
        piece = chunk_size(None, self._connection.max_message_length)
        upload_id: str | None = None
        offset = 0
        with opened() as reader:
            while True:
                data_piece = reader.read(piece)
                if not data_piece and offset < size:
                    raise InternalError(f"{source!r} became shorter while it was uploaded")
                eof = offset + len(data_piece) >= size
                first = upload_id is None
                request = PutBlobReq(
                    agent=self.name,
                    req_id=new_req_id(),
                    computer=computer,
                    upload_id=upload_id,
                    chunk_offset=offset,
                    eof=eof,
                    blob=base64.b64encode(data_piece).decode("ascii"),
                    total_size=size if first else None,
                    sha256=digest if first else None,
                    name_hint=name_hint if first else None,
                )
                answer = ask(self._connection, events.PUT_BLOB, request, PutBlobRet, timeout)
                upload_id = answer.upload_id
                offset += len(data_piece)
                if progress is not None:
                    progress(offset, size)
                if eof:
                    break
        if answer.sha256 is not None and answer.sha256 != digest:
            raise InternalError(f"computer {computer!r} stored the upload with sha256 {answer.sha256}, not {digest}")
        return answer

    def _download(self, computer: str, handle: str, sink: _Sink, progress: Progress | None, timeout: float) -> None:
        wanted = chunk_size(None, self._connection.max_message_length)
        digest = hashlib.sha256()
        first: GetBlobRet | None = None
        offset = 0
        while True:
            request = GetBlobReq(agent=self.name, req_id=new_req_id(), computer=computer, blob_handle=handle,
                                 chunk_offset=offset, max_chunk_bytes=wanted)
            chunk = ask(self._connection, events.GET_BLOB, request, GetBlobRet, timeout)
            if first is None:
                first = chunk
            elif (chunk.sha256, chunk.total_size) != (first.sha256, first.total_size):
                raise _Changed(f"blob {handle} changed while it was read")
            if chunk.chunk_offset > first.total_size:
                raise _out_of_range(handle, chunk.chunk_offset, first.total_size)
            if chunk.chunk_offset != offset:
                raise InternalError(f"asked for the chunk at {offset}, got one at {chunk.chunk_offset}")
            try:
                data = base64.b64decode(chunk.blob, validate=True)
            except (binascii.Error, ValueError):
                raise InternalError(f"chunk at {offset} of blob {handle} is not base64") from None
            if not data and not chunk.eof:
                raise InternalError(f"empty chunk at {offset} of blob {handle} before its end")
            if offset + len(data) > first.total_size:
                raise _out_of_range(handle, offset + len(data), first.total_size)
            digest.update(data)
            sink.write(data)
            offset += len(data)
            if progress is not None:
                progress(offset, chunk.total_size)
            if chunk.eof:
                break
        if offset != first.total_size or digest.hexdigest() != first.sha256.lower():
            raise _Changed(f"blob {handle}: the bytes received do not match its sha256")


class _Sink:
    """Where a download goes: memory, or a temporary file beside `path` that replaces
    `path` only in `result()` (after the sha256 check), so a failure never touches it."""

    def __init__(self, path: PathLike | None) -> None:
        self._path = None if path is None else Path(path)
        self._file: IO[bytes] | None = None
        self._part: Path | None = None
        if self._path is not None:
            self._part = self._path.with_name(f".{self._path.name}.{uuid.uuid4().hex[:12]}.part")
            descriptor = os.open(self._part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            self._file = os.fdopen(descriptor, "wb")
            with contextlib.suppress(FileNotFoundError):  # keep the mode of the file it replaces
                os.chmod(descriptor, stat.S_IMODE(self._path.stat().st_mode))
        self._memory = bytearray()

    def write(self, data: bytes) -> None:
        if self._file is None:
            self._memory += data
        else:
            self._file.write(data)

    def result(self) -> bytes | Path:
        if self._file is None:
            return bytes(self._memory)
        assert self._path is not None and self._part is not None
        self._file.close()
        os.replace(self._part, self._path)
        return self._path

    def discard(self) -> None:
        if self._file is not None:
            assert self._part is not None
            self._file.close()
            self._part.unlink(missing_ok=True)


def _out_of_range(handle: str, offset: int, total_size: int) -> BlobError:
    return BlobError(f"blob {handle}: a chunk reaches offset {offset}, past its total_size {total_size}",
                     code=ErrorCode.BLOB_NOT_ACCESSIBLE, details={"reason": "range"})


def _file_name(handle: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in handle)[:100]
