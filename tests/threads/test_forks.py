"""The after-fork registry (smcp_sync/threads/forks.py) as a process sees it: hooks of
objects that live until the interpreter exits leave nothing on stderr, and a hook whose
object is gone drops out."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from smcp_sync.threads import forks

#: Agents and a Computer made at import and never closed, as a web app's module does.
LIVING_UNTIL_EXIT = """
from smcp_sync import Agent, Computer
agents = [Agent(f"agent-{i}") for i in range(5)]
computer = Computer("pc", [])
"""


def test_objects_living_until_the_interpreter_exits_leave_nothing_on_stderr() -> None:
    done = subprocess.run([sys.executable, "-c", LIVING_UNTIL_EXIT], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")


class Owner:
    """An object that says, on a pipe, that its hook ran in a child."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def after_fork(self) -> None:
        os.write(self.fd, b"ran")


def forked_child_wrote(read: int, write: int) -> bytes:
    """What a forked child (its hooks run, then it exits at once) wrote on the pipe."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    try:
        return os.read(read, 100)
    finally:
        os.close(read)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_hook_runs_in_the_child_while_its_object_lives_and_drops_out_after() -> None:
    read, write = os.pipe()
    owner = Owner(write)
    forks.after_fork_in_child(owner.after_fork)
    assert forked_child_wrote(read, write) == b"ran"
    del owner
    gc.collect()
    assert [hook for hook in forks._hooks.values() if hook.function is Owner.after_fork] == []
