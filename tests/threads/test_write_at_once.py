"""`room_to_write`, which decides whether a thread may write a message to a socket itself,
on real sockets: past FD_SETSIZE too (a Server with more than ~500 offices has its
connections there: `select` refused them, and every message went through the writer),
and under gevent without a switch to another greenlet."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from smcp_sync.threads.write_at_once import room_to_write

pytestmark = pytest.mark.timeout(30)

#: A descriptor past `select`'s FD_SETSIZE.
HIGH_FD = 1500


def skip_unless_high_fds() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= HIGH_FD:
        pytest.skip(f"descriptors are limited to {hard}")


@contextlib.contextmanager
def pair_at_high_fd() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected socket pair whose first socket's descriptor is `HIGH_FD`."""
    skip_unless_high_fds()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft <= HIGH_FD:
        resource.setrlimit(resource.RLIMIT_NOFILE, (HIGH_FD + 1, hard))
    left, right = socket.socketpair()
    try:
        os.dup2(left.fileno(), HIGH_FD)
        high = socket.socket(fileno=HIGH_FD)
        left.close()
        with high, right:
            yield high, right
    finally:
        left.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_socket_past_fd_setsize_with_room_takes_a_write_at_once():
    with pair_at_high_fd() as (high, _):
        assert high.fileno() >= 1024
        assert room_to_write(high) is True


def test_a_full_send_buffer_or_a_closed_socket_does_not():
    with pair_at_high_fd() as (high, right):
        high.setblocking(False)
        with pytest.raises(BlockingIOError):  # the peer reads nothing: the buffers fill up
            while True:
                high.send(b"x" * 65536)
        assert room_to_write(high) is False
        right.recv(1 << 20)  # not enough to make room again: the buffers are larger
    assert room_to_write(high) is False  # closed
    assert room_to_write(None) is False


GEVENT_CHILD = """
import json, os, resource, socket, sys
from gevent import monkey
monkey.patch_all()
import gevent
from smcp_sync.threads.write_at_once import room_to_write  # imported after patching

fd = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, fd + 1), hard))
left, right = socket.socketpair()
os.dup2(left.fileno(), fd)
high = socket.socket(fileno=fd)
others_ran = []
gevent.spawn(others_ran.append, True)  # runs at this greenlet's first switch to the hub
room = room_to_write(high)
print(json.dumps({"room": room, "switched": bool(others_ran)}))
"""


def test_under_gevent_a_high_descriptor_has_room_and_the_check_does_not_switch_greenlets():
    pytest.importorskip("gevent", reason="the test patches with gevent (the test extra has it)")
    skip_unless_high_fds()
    child = [sys.executable, "-c", textwrap.dedent(GEVENT_CHILD), str(HIGH_FD)]
    done = subprocess.run(child, capture_output=True, text=True, timeout=25)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"room": True, "switched": False}
