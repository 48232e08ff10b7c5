"""What a child of `os.fork()` does with the objects it inherited: one registry of hooks.

Why: a forked child has a copy of every object of its parent but only the thread that
forked. A lock another thread held at the fork stays held forever; an event only a
parent's thread would set is never set; a socket is the parent's socket (a byte written
on it goes into the parent's session). gunicorn `--preload`, Celery's prefork pool and
`multiprocessing`'s "fork" start method all fork a process that may hold Agents,
Computers and Servers. So each object that owns threads, locks or sockets registers a
hook here, and every hook runs in the child (`os.register_at_fork`), in registration
order, before the child's code goes on: it replaces its locks, forgets the threads and
the work of the parent, and makes what belongs to the parent unusable, never closing or
writing it in a way the parent would notice (docs/ARCHITECTURE.md, Fork and gevent).

Hooks are held weakly (`weakref.WeakMethod`): registering keeps nothing alive, and a dead
object's hook drops out. No lock guards the registry: a dict's single operations are
atomic, and a lock held by another thread at the fork would block the child's hooks.
"""

from __future__ import annotations

import itertools
import logging
import os
import weakref
from typing import Callable

logger = logging.getLogger(__name__)

_hooks: dict[int, weakref.WeakMethod[Callable[[], None]]] = {}
_keys = itertools.count()
_parent_pid = os.getpid()


def after_fork_in_child(method: Callable[[], None]) -> None:
    """Call the bound `method` in each child forked while its object lives (in the child,
    on the thread that forked, before `os.fork()` returns there)."""
    key = next(_keys)
    _hooks[key] = weakref.WeakMethod(method, lambda _: _hooks.pop(key, None))


def parent_pid() -> int:
    """The process whose objects this one inherited at its last fork (this process itself
    if it never forked): what errors about inherited objects name."""
    return _parent_pid


def _run_hooks() -> None:
    global _parent_pid
    _parent_pid = os.getppid()
    for ref in list(_hooks.values()):
        method = ref()
        if method is None:
            continue
        try:
            method()
        except Exception:  # one object's failure must not leave the others the parent's
            logger.exception("after-fork hook %r failed", method)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_run_hooks)
