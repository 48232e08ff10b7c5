"""`serve()` (gunicorn, in a child process, in each mode) with every worker thread (or
gevent connection slot) taken by clients that never authenticate or never finish a
request: the deadlines free them and a legitimate Agent connects (issue 12, class 2)."""

from __future__ import annotations

import contextlib
from typing import Callable

import pytest
import websocket

from smcp_sync.server.limits.limits import SERVE_MODES

from .hostile import close_all, closed_by_server, engineio_websocket, half_request
from .parts import SETUP_TIMEOUT, join_agent
from .served import serving


@pytest.fixture
def serve(stack: contextlib.ExitStack) -> Callable[..., str]:
    return lambda **options: stack.enter_context(serving(**options)).url


@pytest.mark.parametrize("mode", SERVE_MODES)
def test_a_legitimate_agent_connects_while_hostile_sockets_hold_every_thread(serve, stack, mode):
    # gevent: 4 connection slots, as many as the threads (gthread accepts more connections
    # than threads, and they wait for one)
    url = serve(mode=mode, threads=4, connections=4, limits={"handshake_timeout": 2.0, "header_timeout": 2.0, "max_connections_per_ip": 2})
    silent = [engineio_websocket(url, source="127.0.0.2") for _ in range(2)]
    stack.callback(close_all, silent)
    for _ in range(3):  # past the per-address cap: refused at once, the thread is free again
        with pytest.raises(websocket.WebSocketBadStatusException):
            engineio_websocket(url, source="127.0.0.2")
    half_sent = [half_request(url, source="127.0.0.3") for _ in range(3)]  # with the 2 above: more than 4 threads
    stack.callback(close_all, half_sent)

    join_agent(stack, "legitimate", url, "o1")  # waits up to SETUP_TIMEOUT; held forever without the deadlines
    assert all(closed_by_server(conn, SETUP_TIMEOUT) for conn in [*silent, *half_sent])
