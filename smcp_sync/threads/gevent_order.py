"""Objects made before gevent patched the standard library refuse to start under it.

Why: `gevent.monkey.patch_all()` replaces `threading`'s locks, events and threads with
cooperative ones, but only for objects made after it. A lock made before it is the
operating system's: waiting on it under gevent blocks the whole process, every greenlet
with it (the hub cannot switch), and a wait for another greenlet that holds it never
ends. An Agent, a Computer or a Connection made before patching would hold such locks;
instead of blocking the hub they refuse, at once, to connect or start. Importing
smcp_sync before patching is fine: importing makes no lock.
"""

from __future__ import annotations

import sys


def stdlib_patched() -> bool:
    """Whether gevent has patched `threading` in this process (gevent is not imported here)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("threading"))


class MadeBeforePatchingError(RuntimeError):
    """An object made before `gevent.monkey.patch_all()` is used after it (module doc)."""


def require_same_threading(made_patched: bool, what: str) -> None:
    """Raise `MadeBeforePatchingError` if `what`, made when `stdlib_patched()` was
    `made_patched`, is about to start threads after gevent patched the standard library."""
    if stdlib_patched() and not made_patched:
        raise MadeBeforePatchingError(
            f"{what} was made before gevent.monkey.patch_all(): its locks would block gevent's hub. "
            "Make it after patching (call patch_all() first thing, before making any smcp_sync object; "
            "gunicorn's gevent worker patches before it loads a non-preloaded app)"
        )
