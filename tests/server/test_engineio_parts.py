"""The inner function of python-engineio that `transport/engine.py` recognises by its
qualified name, checked against the installed release: tox's `lowest` environment runs
tests/server on setup.cfg's floor (tests/lowest-constraints.txt), the others on the newest,
so a release that renames or reshapes it fails here, naming itself, instead of leaving
`serve(mode="gevent")` one waiting writer per idle websocket without a word."""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any

import websocket
from engineio.socket import Socket as EngineIOSocket

from smcp_sync.protocol import events
from smcp_sync.server.transport import engine
from smcp_sync.server.transport.engine import stock_websocket_writer

ENGINEIO = f"python-engineio {importlib.metadata.version('python-engineio')}"


def test_the_writer_engineio_starts_for_a_websocket_is_recognised_with_its_socket_and_websocket(server):
    eio = server.sio.eio
    started: list[Any] = []  # every task engineio hands the Server to start
    handed = threading.Event()
    start = eio.start_background_task

    def recorded(target: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(target)
        handed.set()
        return start(target, *args, **kwargs)

    eio.start_background_task = recorded
    ws = websocket.create_connection(server.url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket", timeout=10)
    try:
        assert ws.recv().startswith("0{")
        ws.send(f"40{events.NAMESPACE},")
        assert ws.recv().startswith(f"40{events.NAMESPACE},")
        assert handed.wait(10)
        writers = [parts for parts in map(stock_websocket_writer, started) if parts is not None]
        names = [getattr(target, "__qualname__", repr(target)) for target in started]
        assert writers, f"{ENGINEIO} starts no {engine._WEBSOCKET_WRITER!r} for a websocket (it started {names}): update transport/engine.py"
        [(sock, stock_ws)] = writers
        assert isinstance(sock, EngineIOSocket) and eio.sockets == {sock.sid: sock}, f"{ENGINEIO}: the writer's `self` is not the socket"
        assert callable(stock_ws.send) and callable(stock_ws.close), f"{ENGINEIO}: the writer's `ws` is not the websocket"
    finally:
        ws.close()
        eio.start_background_task = start
