"""Starting the relay: by the first worker that needs it, once, whoever races for it.

A worker that finds no relay takes `start.lock` (`fcntl.flock`, waited for within its
timeout), looks again (another worker may have started one meanwhile), and only then
starts ``smcp-sync agent-relay --detach`` (with the worker's interpreter: `interpreter`):
that process forks the relay into a session of its own (so a worker's exit or its process group's signals never reach it, and it
is no worker's child) and exits once the relay listens. The relay itself holds
`relay.lock` while it runs, so a second one (started by hand) refuses to serve the same
folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from .place import RelayPlace

#: Environment variable: the log level of a relay a worker starts (its log: relay.log in its folder).
LOG_LEVEL_VARIABLE = "SMCP_RELAY_LOG_LEVEL"
#: Seconds a worker waits for a relay it started to listen, by default.
DEFAULT_START_TIMEOUT = 30.0
_LOCK_POLL = 0.01
#: ``smcp-sync`` run by this interpreter (a worker's venv may not be on PATH).
_COMMAND = "import sys; from smcp_sync.cli import main; sys.exit(main(sys.argv[1:]))"
#: ``serve(ready)``: runs the relay, calling `ready()` once it listens.
Serve = Callable[[Callable[[], None]], None]


class RelayStartError(RuntimeError):
    """The relay could not be started (its log, in the relay's folder, says why)."""


def start_relay(place: RelayPlace, timeout: float, options: tuple[str, ...] = ()) -> None:
    """Start a detached relay for `place` and return once it listens."""
    place.prepare()
    with open(place.log_path, "ab", opener=lambda path, flags: place.open_private(place.log_path)) as log:
        launcher = subprocess.Popen(
            [interpreter(), "-c", _COMMAND, "agent-relay", "--folder", str(place.folder), "--detach",
             "--log-level", os.environ.get(LOG_LEVEL_VARIABLE, "WARNING"), *options],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, close_fds=True,
        )  # fmt: skip
        try:
            code = launcher.wait(timeout)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
            raise RelayStartError(f"the relay did not listen within {timeout:g}s (see {place.log_path})") from None
    if code != 0:
        raise RelayStartError(f"the relay could not start (exit {code}; see {place.log_path})")


def interpreter() -> str:
    """The Python this process runs, as a command: `sys.executable`, unless a host that
    embeds Python set it to something outside this environment (uWSGI sets it to the
    base interpreter, outside the virtualenv the app runs in), then ``python3`` of
    `sys.prefix`, the environment's own."""
    prefix = Path(sys.prefix)
    if sys.executable and prefix in Path(sys.executable).parents:
        return sys.executable
    for name in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3", "python"):
        candidate = prefix / "bin" / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return sys.executable


def starting(place: RelayPlace, timeout: float) -> contextlib.AbstractContextManager[None]:
    """Hold `start.lock` (waiting at most `timeout` seconds for it)."""
    return locked(place, place.start_lock, timeout, f"another process is starting the relay in {place.folder}")


@contextlib.contextmanager
def locked(place: RelayPlace, path: Path, timeout: float, busy: str) -> Iterator[None]:
    """Hold the lock file `path` of `place` (`RelayStartError(busy)` past `timeout`)."""
    place.prepare()
    descriptor = place.open_private(path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RelayStartError(busy) from None
                time.sleep(_LOCK_POLL)  # flock has no timeout of its own
        yield
    finally:
        os.close(descriptor)


def detach(serve: Serve) -> int:
    """Run `serve(ready)` in a grandchild in a session of its own; exit 0 once it calls
    `ready()`, 1 if it ends first."""
    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            return 0 if pipe.read(1) == b"1" else 1
    os.close(read_end)
    os.setsid()
    if os.fork():
        os._exit(0)  # the grandchild is nobody's child: init reaps it

    def ready() -> None:
        os.write(write_end, b"1")
        os.close(write_end)

    try:
        serve(ready)
    finally:
        os._exit(0)

