"""Shared fixtures: leak checks for threads and child processes.

Use `no_leaks` in any test that starts threads or processes: it fails the test when,
a few seconds after the test body, a thread or child process started by it still runs.
"""

from __future__ import annotations

import threading
import time

import psutil
import pytest

LEAK_GRACE_SECONDS = 8.0


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


@pytest.fixture
def no_leaks():
    threads_before, children_before = _threads(), _children()
    yield
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while True:
        new_threads = _threads() - threads_before
        new_children = _children() - children_before
        if not new_threads and not new_children:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    names = sorted(t.name for t in new_threads)
    pytest.fail(f"leaked threads {names} and child processes {sorted(new_children)}")
