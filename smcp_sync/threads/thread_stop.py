"""Waiting for one of the Computer's own threads once it has been told to stop."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


def join_stopped(thread: threading.Thread, timeout: float, what: str) -> None:
    """Wait up to `timeout` for `thread`, already told to stop, to end; a warning if it
    does not (`close()` bounds every wait). From `thread` itself (a listener closing the
    Computer) there is nothing to wait for: it ends when the caller returns."""
    if not thread.is_alive() or threading.current_thread() is thread:
        return
    thread.join(timeout)
    if thread.is_alive():
        log.warning("%s %s did not stop within %.1fs", what, thread.name, timeout)
