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
from typing import Any

#: The longest message written at once; longer ones go to the writer.
WRITE_AT_ONCE_MAX = 64 * 1024


def room_to_write(sock: socket.socket | Any) -> bool:
    """Whether `sock` takes data now (its send buffer has room: a zero-timeout `select`;
    gevent's under gevent). False for a closed socket."""
    if sock is None:
        return False
    try:
        return bool(select.select([], [sock], [], 0)[1])
    except (OSError, ValueError):  # closed meanwhile: the writer reports it
        return False
