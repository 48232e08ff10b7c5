"""A stdio MCP server's stderr: a pipe drained on the bridge loop, never left to fill up.

Why a pipe and not our own stderr: the SDK needs a real file (Jupyter's `sys.stderr` has
no `fileno()`), a child blocked on a full stderr pipe stops answering, and a server's
chatter belongs in our log (DEBUG), with its last lines kept to explain a crash.
A small task reads the pipe without blocking the loop (no thread), and stops with the
connection. After a read that emptied the pipe it pauses (`QUIET_PAUSE`) before the next:
servers that log a line or two per request (FastMCP does) would otherwise wake the loop
once more per tool call, next to the answer; a read that fills the buffer goes on at once.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
from typing import AsyncIterator, TextIO

import anyio

log = logging.getLogger(__name__)

#: Longest stderr line kept whole; longer ones are cut (a child that never writes a
#: newline must not grow our buffer without bound).
MAX_LINE = 8192
TAIL_LINES = 20
_READ_SIZE = 65536
#: Reads after the connection ended: what a dying child wrote last explains its death.
_FINAL_READS = 64
#: Seconds between reads of a pipe that the last read emptied. Meanwhile the child writes
#: into the pipe's buffer (64 KB on Linux); one writing more waits at most this long.
QUIET_PAUSE = 0.02


class StderrTail:
    """Logs each stderr line of one server at DEBUG and remembers the last few."""

    def __init__(self, server: str) -> None:
        self._log = log.getChild(server)
        self.lines: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self._log.debug("%s", line)

    def text(self) -> str:
        return "\n".join(self.lines)


@contextlib.asynccontextmanager
async def stderr_pipe(tail: StderrTail, encoding: str = "utf-8") -> AsyncIterator[TextIO]:
    """Yield the write end to hand to the child; the caller closes it once spawned."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    writer = os.fdopen(write_fd, "w", encoding=encoding)
    lines = _Lines(tail, encoding)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_drain, read_fd, lines)
            try:
                yield writer
            finally:
                tasks.cancel_scope.cancel()
    finally:
        if not writer.closed:
            writer.close()
        for _ in range(_FINAL_READS):
            if not _read_available(read_fd, lines):
                break
        lines.flush()
        os.close(read_fd)


async def _drain(fd: int, lines: _Lines) -> None:
    while True:
        await anyio.wait_readable(fd)
        read = _read_available(fd, lines)
        if read is None:
            return
        if read < _READ_SIZE:
            await anyio.sleep(QUIET_PAUSE)


def _read_available(fd: int, lines: _Lines) -> int | None:
    """Read one chunk: how many bytes (0: nothing right now), None at end of file."""
    try:
        chunk = os.read(fd, _READ_SIZE)
    except BlockingIOError:
        return 0
    except OSError:
        return None
    if not chunk:
        return None
    lines.feed(chunk)
    return len(chunk)


class _Lines:
    """Splits a byte stream into lines for the tail."""

    def __init__(self, tail: StderrTail, encoding: str) -> None:
        self._tail = tail
        self._encoding = encoding
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._pending.extend(chunk)
        while True:
            cut = self._pending.find(b"\n")
            if cut < 0:
                if len(self._pending) <= MAX_LINE:
                    return
                self._emit(MAX_LINE, MAX_LINE)
            else:
                self._emit(cut, cut + 1)

    def flush(self) -> None:
        if self._pending:
            self._emit(len(self._pending), len(self._pending))

    def _emit(self, end: int, consumed: int) -> None:
        line = bytes(self._pending[:end])
        del self._pending[:consumed]
        self._tail(line.decode(self._encoding, "replace").rstrip("\r"))
