"""A raw python-socketio Server that plays the SMCP Server for the connection tests.

Why not `SMCPServer`: these tests pin down the client's behaviour against scripted
answers (refusals with and without codes, flat and nested errors, silence, a
server-initiated disconnect) that a correct Server never gives on purpose.

In-thread: ``RawServer().start()`` → URL (werkzeug on 127.0.0.1:0), ``.stop()``.
As a child process (for real crashes): ``python raw_server.py [port [refuse]]`` prints
its URL, then the name of each event it receives, on stdout and serves until killed;
``refuse`` makes it refuse every join with 4101.

Scripted events (all on `/smcp`):
* ``server:join_office`` — refuses office ids starting with ``full-`` with
  ``"[4101] ..."``, with ``plain-`` with an uncoded message; else ``(True, None)``.
* ``server:leave_office`` — ``(True, None)``; ``server:list_room`` — an empty office;
  ``client:get_config`` — an empty answer (what the official SDK's Server gives).
* ``test:echo`` → its payload; ``test:hang`` → answers when the server stops;
  ``test:whoami`` → ``{"sid", "office_id"}``; ``test:kick`` → the server disconnects the
  caller; ``test:ask`` ``{"event", "payload"}`` → ``{"answer": <the caller's answer to that event>}``.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import socketio
from werkzeug.serving import WSGIRequestHandler, make_server

NAMESPACE = "/smcp"
#: Short pings so the server's per-connection ping threads end soon after a test.
PING_INTERVAL = 0.25
#: A child process's (`__main__`) ping timeout.
CHILD_PING_TIMEOUT = 20.0
#: A child's ping interval with the option "quiet": nothing on the wire within a test
#: unless the client sends something.
QUIET_PING_INTERVAL = 60.0


class _QuietHandler(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        pass


class RawServer:
    def __init__(
        self,
        api_key: str | None = None,
        print_events: bool = False,
        refuse_joins: bool = False,
        ping_interval: float = PING_INTERVAL,
        ping_timeout: float = 2,
    ):
        self.api_key = api_key
        self.refuse_joins = refuse_joins
        self.print_events = print_events
        self.sio = socketio.Server(async_mode="threading", ping_interval=ping_interval, ping_timeout=ping_timeout)
        self.offices: dict[str, str] = {}  # sid -> office_id
        self.received: list[tuple[str, str, Any]] = []  # (event, sid, payload)
        self.disconnected: list[str] = []
        self.changed = threading.Condition()
        self._stopping = threading.Event()
        self._http = None
        self._thread: threading.Thread | None = None
        for event, handler in {
            "connect": self._connect,
            "disconnect": self._disconnect,
            "server:join_office": self._join,
            "server:leave_office": self._leave,
            "server:list_room": lambda sid, data: {"sessions": [], "req_id": data["req_id"]},
            "test:echo": lambda sid, data: data,
            "test:hang": lambda sid, data: self._stopping.wait(30),
            "test:whoami": lambda sid, data: {"sid": sid, "office_id": self.offices.get(sid)},
            "test:kick": lambda sid, data: self.sio.disconnect(sid, namespace=NAMESPACE),
            "test:ask": lambda sid, data: {"answer": self.sio.call(data["event"], data.get("payload"), to=sid, namespace=NAMESPACE, timeout=5)},
            "test:note": lambda sid, data: None,
            "client:get_config": lambda sid, data: None,
        }.items():
            self.sio.on(event, self._recording(event, handler), namespace=NAMESPACE)

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, port: int = 0) -> str:
        self._http = make_server("127.0.0.1", port, socketio.WSGIApp(self.sio), threaded=True, request_handler=_QuietHandler)
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="raw-server", daemon=True)
        self._thread.start()
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_port}"

    def stop(self) -> None:
        self._stopping.set()
        self.sio.shutdown()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    # -- observation ---------------------------------------------------------------------

    def wait_for(self, predicate, timeout: float = 5.0) -> Any:
        """Wait until `predicate()` is truthy (checked whenever the server records something)."""
        with self.changed:
            result = self.changed.wait_for(predicate, timeout)
        assert result, f"server did not see what was expected within {timeout}s; received {self.received}"
        return result

    def payloads(self, event: str) -> list[Any]:
        with self.changed:
            return [payload for name, _, payload in self.received if name == event]

    # -- handlers ------------------------------------------------------------------------

    def _recording(self, event: str, handler):
        def record(sid: str, *args: Any) -> Any:
            with self.changed:
                self.received.append((event, sid, args[0] if args else None))
                self.changed.notify_all()
            if self.print_events:
                print(event, flush=True)
            return handler(sid, *args)

        return record

    def _connect(self, sid: str, environ: dict, auth: Any = None) -> None:
        if self.api_key is not None and (auth or {}).get("api_key") != self.api_key:
            raise socketio.exceptions.ConnectionRefusedError("invalid api key")

    def _disconnect(self, sid: str, reason: Any = None) -> None:
        with self.changed:
            self.offices.pop(sid, None)
            self.disconnected.append(sid)
            self.changed.notify_all()

    def _join(self, sid: str, data: dict) -> tuple[bool, str | None]:
        office_id = data["office_id"]
        if office_id.startswith("full-") or self.refuse_joins:
            return False, f"[4101] office {office_id} already has an agent"
        if office_id.startswith("plain-"):
            return False, "Room already has an agent"
        self.offices[sid] = office_id
        self.sio.enter_room(sid, office_id, namespace=NAMESPACE)
        return True, None

    def _leave(self, sid: str, data: dict) -> tuple[bool, None]:
        self.offices.pop(sid, None)
        self.sio.leave_room(sid, data["office_id"], namespace=NAMESPACE)
        return True, None


if __name__ == "__main__":  # a child process a test can kill
    logging.basicConfig(level=logging.WARNING)
    # a child is killed, not stopped: no ping thread outlives it, so pings may wait long
    # (a loaded machine answered a 2 s ping timeout too late, dropping the test's client)
    options = sys.argv[2:]  # "refuse": joins refused; "quiet": no pings within a test
    server = RawServer(
        print_events=True,
        refuse_joins="refuse" in options,
        ping_interval=QUIET_PING_INTERVAL if "quiet" in options else PING_INTERVAL,
        ping_timeout=CHILD_PING_TIMEOUT,
    )
    print(server.start(int(sys.argv[1]) if len(sys.argv) > 1 else 0), flush=True)
    server._thread.join()
