"""A harness run by the conformance suite without an interpreter start per scenario.

The suite runs its client command once per scenario, all at once; a Python harness
started anew each time imports the `mcp` SDK (and ours, smcp_sync) every time: one to
two seconds of CPU each, 52 times, on CI's two cores. So ``python forkserver.py serve
SOCKET MODULE`` imports the harness MODULE (beside this file) once, starts no thread,
and for each connection on the Unix socket SOCKET forks a child that runs
``MODULE.run()`` as that scenario's process: the suite's argv, environment, stdin, stdout
and stderr (its file descriptors passed over the socket). The command the suite runs,
``python -I -S forkserver.py SOCKET``, loads nothing but this file, hands those over and
exits with the child's exit status.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import socket
import struct
import sys
import threading
import traceback
from pathlib import Path

MESSAGE_LIMIT = 1 << 20  # the suite's environment and context (a PEM key), with room to spare
STATUS = struct.Struct("!i")


def ask(path: str) -> int:
    """The suite's side: run the harness behind `path` as this process would."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        connection.connect(path)
        message = json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}).encode()
        socket.send_fds(connection, [message], [0, 1, 2])
        answer = connection.recv(STATUS.size)
    return STATUS.unpack(answer)[0] if len(answer) == STATUS.size else 70  # the server went away


def serve(path: str, module: str) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    harness = importlib.import_module(module)
    assert threading.active_count() == 1, "importing the harness started a thread: forking is not safe"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection to answer
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        while True:
            if selector.select(timeout=0.02):
                connection, _ = listener.accept()
                waiting[_fork(connection, listener, harness.run)] = connection
            _answer_ended(waiting)


def _fork(connection: socket.socket, listener: socket.socket, run: object) -> int:
    message, fds, _, _ = socket.recv_fds(connection, MESSAGE_LIMIT, 3)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    status = 70
    try:
        listener.close()
        connection.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        request = json.loads(message)
        sys.argv = [sys.argv[0], *request["argv"]]
        os.environ.clear()
        os.environ.update(request["env"])
        status = run()  # type: ignore[operator]
    except BaseException:  # noqa: B902  (the child ends here whatever happened)
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _answer_ended(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        with waiting.pop(pid) as connection, contextlib.suppress(OSError):  # the suite may have given up on it
            connection.send(STATUS.pack(os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        path = sys.argv.pop(1)
        sys.exit(ask(path))
