"""Serving in the foreground until Ctrl-C (KeyboardInterrupt, exit 130) or SIGTERM
(`Terminated`, exit 0), for the sub-commands that keep running."""

from __future__ import annotations

import contextlib
import os
import select
import signal
from typing import Any, Iterator, NoReturn


class Terminated(Exception):
    """SIGTERM, raised by its handler in the main thread."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises `Terminated` in the main thread (so `finally`
    clauses stop what was started); the previous handler is restored after it."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def wait_for_signals() -> NoReturn:
    """Return never; a signal handler raises (SIGTERM: `Terminated`, SIGINT:
    KeyboardInterrupt). Why the wakeup fd: the OS may deliver the signal to any of our
    threads, and then a plain sleep or wait in the main thread is not interrupted; the
    interpreter writes to the wakeup fd whichever thread receives it."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd)
    try:
        while True:
            select.select([read_fd], [], [])
            os.read(read_fd, 512)  # the handler runs here, in the main thread
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
