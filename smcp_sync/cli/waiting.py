"""A note on the terminal while a command waits: a start-up or a request that takes over
`NOTE_AFTER` seconds says what it is waiting for on stderr, and how long it took.

Only when stderr is a terminal and the command was not asked for `--json`: a script
reading the output, or a log, gets none of it. The note is written by a short-lived
thread the block's end joins, so nothing is left running.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import IO, Iterator

#: Seconds of waiting before the note appears (shorter waits say nothing).
NOTE_AFTER = 1.0


def terminal(stream: IO[str], quiet: bool) -> IO[str] | None:
    """`stream` if notes may go there (a terminal, not `quiet`), else None."""
    return stream if not quiet and stream.isatty() else None


@contextlib.contextmanager
def waiting(what: str, stream: IO[str] | None) -> Iterator[None]:
    """Around a wait: after `NOTE_AFTER` seconds, ``what...`` on `stream`; at the end the
    seconds it took on the same line. `stream` None: silent."""
    if stream is None:
        yield
        return
    started = time.monotonic()
    finished, noted = threading.Event(), threading.Event()

    def note() -> None:
        if not finished.wait(NOTE_AFTER):
            stream.write(f"{what}...")
            stream.flush()
            noted.set()

    thread = threading.Thread(target=note, name="smcp-cli-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        finished.set()
        thread.join()
        if noted.is_set():
            stream.write(f" {time.monotonic() - started:.1f} s\n")
            stream.flush()
