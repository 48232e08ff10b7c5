"""Waiting on the main thread so that signal handlers (Ctrl-C, a Jupyter interrupt, a
worker's timeout signal) run while it waits.

Why: CPython runs Python signal handlers on the main thread only, and a lock or event
wait there is cut short only when the signal interrupts that thread's own system call.
The operating system may deliver a process's signal to any thread that does not block
it (a reader or pool thread of ours among them): the main thread then sleeps on until
its wait ends, for a tool call up to its whole timeout. So on the main thread a long wait
wakes every `MAIN_THREAD_WAKE` seconds, and a handler due by then runs (raising
KeyboardInterrupt there, say). Other threads never run handlers: they wait in one go.
"""

from __future__ import annotations

import threading
import time

#: Seconds between wake-ups of a wait on the main thread.
MAIN_THREAD_WAKE = 0.5


def wait_event(event: threading.Event, timeout: float) -> bool:
    """`event.wait(timeout)`, waking on the main thread to let signal handlers run."""
    if threading.current_thread() is not threading.main_thread():
        return event.wait(max(0.0, timeout))
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if event.wait(max(0.0, min(remaining, MAIN_THREAD_WAKE))):
            return True
        if remaining <= MAIN_THREAD_WAKE:
            return event.is_set()
