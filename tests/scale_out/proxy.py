"""A small TCP proxy in front of Server nodes, as a load balancer is in production: each
connection goes to the first node of `backends` that accepts it, so when that node dies
its clients reconnect through the proxy to the next. `backends` may change while it
runs. Every thread it starts ends at `close()`.
"""

from __future__ import annotations

import socket
import threading

#: Longest a connect to a node may take (a dead node refuses at once on loopback).
CONNECT_TIMEOUT = 2.0
#: How often blocked accepts and reads look at the closing flag.
POLL = 0.2


class Proxy:
    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = backends
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._start(self._accept)

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name="test-proxy", daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            node = self._connect()
            if node is None:
                client.close()
                continue
            self._start(self._pipe, client, node)
            self._start(self._pipe, node, client)

    def _connect(self) -> socket.socket | None:
        for address in list(self.backends):
            try:
                return socket.create_connection(address, timeout=CONNECT_TIMEOUT)
            except OSError:
                continue
        return None

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(POLL)
        try:
            while not self._closing.is_set():
                try:
                    data = source.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:  # either side ending ends both directions; each socket is one pipe's source
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            source.close()

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(5 * POLL + CONNECT_TIMEOUT)
        assert not any(t.is_alive() for t in threads), "proxy threads still running"

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
