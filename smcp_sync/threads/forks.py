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

gevent: an object made before `gevent.monkey.patch_all()` holds the operating system's
locks, which block gevent's hub (`gevent_order`). Such objects that may be used after it
(a relay Agent made at import by a `--preload`ed app, in a gevent worker) are renewed by
`renew_made_before_patching()`: their hooks run once more, now that `threading` is
gevent's, so what they make next is gevent's too.

Hooks are held weakly (a weak reference to the object beside its method's function):
registering keeps nothing alive, and a dead object's hook drops out. Not
`weakref.WeakMethod`: its callback fails when the interpreter exits while the object
lives, one "Exception ignored" traceback per object on stderr (an Agent made at import).
No lock guards the registry: a dict's single operations are atomic, and a lock held by
another thread at the fork would block the child's hooks.
"""

from __future__ import annotations

import itertools
import logging
import os
import weakref
from typing import Callable, Iterable, NamedTuple

from .gevent_order import stdlib_patched

logger = logging.getLogger(__name__)


class _Hook(NamedTuple):
    """A bound method held weakly: its object, and the function it calls."""

    owner: weakref.ref[object]
    function: Callable[[object], None]


_hooks: dict[int, _Hook] = {}
#: The keys of the hooks registered before gevent patched the standard library.
_made_before_patching: set[int] = set()
_keys = itertools.count()
_parent_pid = os.getpid()


def after_fork_in_child(method: Callable[[], None]) -> None:
    """Call the bound `method` in each child forked while its object lives (in the child,
    on the thread that forked, before `os.fork()` returns there)."""
    key = next(_keys)
    owner: object = getattr(method, "__self__")
    _hooks[key] = _Hook(weakref.ref(owner, _forgetting(key)), getattr(method, "__func__"))
    if not stdlib_patched():
        _made_before_patching.add(key)


def _forgetting(key: int) -> Callable[[object], None]:
    """The callback that drops hook `key` once its object is gone; it holds the registry
    itself, as the module's globals may already be cleared when it runs at exit."""
    hooks, made_before_patching = _hooks, _made_before_patching

    def forget(_: object) -> None:
        hooks.pop(key, None)
        made_before_patching.discard(key)

    return forget


def renew_made_before_patching() -> None:
    """Once gevent has patched the standard library: run, once, the hooks of the objects
    made before it (module doc). Only for objects not used since the patching."""
    keys = sorted(_made_before_patching)
    _made_before_patching.clear()
    _call([_hooks.get(key) for key in keys])


def parent_pid() -> int:
    """The process whose objects this one inherited at its last fork (this process itself
    if it never forked): what errors about inherited objects name."""
    return _parent_pid


def _run_hooks() -> None:
    global _parent_pid
    _parent_pid = os.getppid()
    _call(list(_hooks.values()))


def _call(hooks: Iterable[_Hook | None]) -> None:
    for hook in hooks:
        owner = None if hook is None else hook.owner()
        if hook is None or owner is None:
            continue
        try:
            hook.function(owner)
        except Exception:  # one object's failure must not leave the others the parent's
            logger.exception("after-fork hook %s of %r failed", hook.function.__qualname__, owner)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_run_hooks)
