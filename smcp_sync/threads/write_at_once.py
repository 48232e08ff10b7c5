"""When the thread that has a message may write it to its socket itself.

Why: handing each message to a writer thread costs a wake-up per message (on the Server,
two per tool call: benchmarks/README.md, Findings 5 and 7), but a thread that writes itself
must never wait for a peer that reads nothing (the Computer's event loop, or a Server
thread relaying one peer's answer to another). So it writes only a short message, when
no other message is being written (its caller's lock) and the socket's buffer has room;
otherwise the message goes to the writer as before, which keeps the order and the limits
on what may wait for a slow peer.
"""

from __future__ import annotations

import select
import socket
import sys
from typing import Any, Callable

#: The longest message written at once; longer ones go to the writer.
WRITE_AT_ONCE_MAX = 64 * 1024


def _os_poll() -> Callable[[], Any]:
    """`select.poll` as the operating system has it, even once gevent has patched `select`
    (gevent's waits on its hub even for a zero timeout; a zero-timeout poll never blocks).
    Not `select.select`: it refuses descriptors from FD_SETSIZE (1024) on, which a Server
    past ~500 offices gives its connections, and every message to them then went through
    the writer (benchmarks/README.md, routing at size)."""
    monkey = sys.modules.get("gevent.monkey")  # not imported: nothing is patched
    return monkey.get_original("select", "poll") if monkey is not None else select.poll


_poll = _os_poll()


def room_to_write(sock: socket.socket | Any) -> bool:
    """Whether `sock` takes data now (its send buffer has room: a zero-timeout poll).
    False for a closed socket."""
    if sock is None:
        return False
    try:
        poller = _poll()
        poller.register(sock, select.POLLOUT)
        ready = poller.poll(0)
    except (OSError, ValueError):  # closed meanwhile: the writer reports it
        return False
    return bool(ready) and bool(ready[0][1] & select.POLLOUT)
