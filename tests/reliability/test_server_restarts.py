"""The Server after `drop_connections()` (issue 24: it left Engine.IO's sleep broken, so a
client connecting afterwards was pinged ~2,000 times a second), and `serve()` returning
only in the process that called it (it returned in the gunicorn worker too)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import websocket

from smcp_sync.protocol import events

from .hostile import closed_by_server
from .raw_socket import RawSocket

#: Seconds a client counts the pings it gets; with `ping_interval=1` about 3 are due.
COUNTED_FOR = 3.0


def _pings_within(ws: websocket.WebSocket, seconds: float) -> int:
    """Answer and count Engine.IO PINGs for `seconds` (a ping storm is thousands); the
    socket's timeout is put back afterwards (the last one left was a few ms: the next
    request on it timed out on a loaded machine)."""
    pings = 0
    timeout = ws.gettimeout()
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            ws.settimeout(left)
            try:
                frame = ws.recv()
            except websocket.WebSocketTimeoutException:
                break
            if frame == "2":
                pings += 1
                ws.send("3")
    finally:
        ws.settimeout(timeout)
    return pings


def test_after_drop_connections_the_server_serves_as_before(server_process):
    server = server_process(ping_interval=1)
    before = RawSocket(server.url, auth={})
    assert _pings_within(before._ws, COUNTED_FOR) <= 4
    threads = server.process.num_threads()
    server.drop_connections()
    assert closed_by_server(before._ws, 10.0)
    before.close()

    after = RawSocket(server.url, auth={})
    try:
        assert _pings_within(after._ws, COUNTED_FOR) <= 4  # pinged every second, not in a loop
        assert after.emit(events.JOIN_OFFICE, {"role": "agent", "name": "a1", "office_id": "o1"}) == [True, None]
        assert server.process.num_threads() <= threads + 2
    finally:
        after.close()


#: `serve()` and what a script does after it returns, with the pid it ran in.
SERVE_THEN_PRINT = """
import os
from smcp_sync import SMCPServer
SMCPServer().serve(port=0, on_ready=lambda url: print(url, flush=True))
print("serve() returned in", os.getpid(), flush=True)
"""


def test_serve_returns_only_in_the_process_that_called_it(no_leaks):
    proc = subprocess.Popen([sys.executable, "-c", SERVE_THEN_PRINT], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        served = RawSocket(url, auth={})  # answered by the worker: it is up
        served.close()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert out.splitlines() == [f"serve() returned in {proc.pid}"]
