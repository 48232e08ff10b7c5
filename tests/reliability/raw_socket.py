"""A bare websocket speaking Engine.IO/Socket.IO text frames by hand, to send what no
Socket.IO library would encode: invalid JSON, event arrays without a name, events named
like lifecycle handlers, a second namespace CONNECT on one socket."""

from __future__ import annotations

import json
from typing import Any

import websocket

from smcp_sync.protocol import events


class RawSocket:
    def __init__(self, url: str, auth: dict[str, Any] | None = None, timeout: float = 10.0) -> None:
        self._ws = websocket.create_connection(
            url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket", timeout=timeout
        )
        self._next_id = 0
        self._events: list[tuple[str, Any]] = []
        assert self._receive().startswith("0{")  # Engine.IO open
        answer = self.connect_namespace(auth)
        assert answer.startswith(f"40{events.NAMESPACE},"), answer

    def connect_namespace(self, auth: dict[str, Any] | None = None) -> str:
        """Send a Socket.IO CONNECT for /smcp; the Server's answer packet, as text."""
        self._ws.send(f"40{events.NAMESPACE}," + (json.dumps(auth) if auth is not None else ""))
        return self._receive()

    def ask(self, body: str) -> Any:
        """Send an event packet with `body` as its JSON part; the answer's arguments.
        Events that arrive meanwhile are kept for `received`."""
        self._next_id += 1
        header = f"2{events.NAMESPACE},{self._next_id}"
        self._ws.send("4" + header + body)
        expected = f"43{events.NAMESPACE},{self._next_id}"
        while True:
            answer = self._receive()
            if answer.startswith(expected):
                return json.loads(answer[len(expected):])
            assert answer.startswith(f"42{events.NAMESPACE},"), f"{answer!r:.200} does not answer {header!r}"
            self._keep_event(answer)

    def send_packet(self, packet: str, ack_id: int) -> Any:
        """Send a whole Socket.IO packet, as text, that asks for answer `ack_id`; the answer's arguments."""
        self._ws.send("4" + packet)
        expected = f"43{events.NAMESPACE},{ack_id}"
        answer = self._receive()
        assert answer.startswith(expected), f"{answer!r:.200} does not answer {packet!r:.100}"
        return json.loads(answer[len(expected):])

    def send_binary(self, data: bytes) -> None:
        """Send an Engine.IO binary message (what would be a packet's attachment)."""
        self._ws.send_binary(data)

    def emit(self, event: str, payload: Any) -> Any:
        """`ask` for one event and its payload."""
        return self.ask(json.dumps([event, payload]))

    def received(self, timeout: float = 0.5) -> list[tuple[str, Any]]:
        """Every event received so far, waiting up to `timeout` for more to arrive."""
        self._ws.settimeout(timeout)
        try:
            while True:
                frame = self._receive()
                if frame.startswith(f"42{events.NAMESPACE},"):
                    self._keep_event(frame)
        except websocket.WebSocketTimeoutException:
            pass
        return list(self._events)

    def _keep_event(self, frame: str) -> None:
        """Keep an EVENT packet's name and payload (requests are kept too, unanswered)."""
        body = frame[len(f"42{events.NAMESPACE},"):].lstrip("0123456789")  # an ack id, if any
        self._events.append(tuple(json.loads(body)))

    def _receive(self) -> str:
        while True:
            frame = self._ws.recv()
            if frame != "2":  # answer Engine.IO pings, skip nothing else
                return frame
            self._ws.send("3")

    def close(self) -> None:
        self._ws.close(timeout=0)
