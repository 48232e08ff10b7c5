"""The python-socketio Server the SMCP Server runs on, made stoppable.

Engine.IO (threading mode) starts one ping thread per connection that sleeps
`ping_interval` (25 s) between pings, and closing a polling socket the usual way waits
for the client to fetch its last packet (DESIGN §7). Our `stop()` must end every thread
promptly, so sleeps here end at shutdown and `drop_all_connections` closes without
waiting.
"""

from __future__ import annotations

import threading

import engineio
import socketio


class StoppableEngineIO(engineio.Server):
    """An Engine.IO server whose sleeps return at `shutdown()`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._stopping = threading.Event()

    def sleep(self, seconds: float = 0) -> None:
        self._stopping.wait(seconds)

    def shutdown(self) -> None:
        """Idempotent (Engine.IO's own shutdown fails when called twice)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        super().shutdown()

    def drop_all_connections(self) -> None:
        """Close every Engine.IO socket now, without a CLOSE packet and without waiting
        for delivery: clients see a lost transport and reconnect when a server is back.
        Each close runs the Socket.IO disconnect handlers."""
        for eio_sid, sock in list(self.sockets.items()):
            sock.close(wait=False, abort=True, reason=self.reason.SERVER_DISCONNECT)
            self.sockets.pop(eio_sid, None)


class SocketIOServer(socketio.Server):
    """`socketio.Server` on a `StoppableEngineIO` (via the hook python-socketio provides
    for choosing the Engine.IO server class)."""

    eio: StoppableEngineIO

    def _engineio_server_class(self) -> type[engineio.Server]:
        return StoppableEngineIO
