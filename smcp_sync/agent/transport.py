"""`AgentTransport`: what the Agent needs of the way to its Server.

Why a protocol: the Agent's methods are written once, over either of two transports of
the same shape: its own `connection.session.Connection` (a Socket.IO session), or a
`relay.transport.RelayConnection` through the host's Agent relay (`Agent.via_relay`:
several processes, one office seat; docs/ARCHITECTURE.md, The Agent relay).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..protocol.errors import SMCPError


class AgentTransport(Protocol):
    name: str

    @property
    def url(self) -> str | None: ...

    @property
    def office_id(self) -> str | None: ...

    @property
    def connected(self) -> bool: ...

    @property
    def max_message_length(self) -> int | None: ...

    @property
    def peer_extensions(self) -> frozenset[str]: ...

    def connect(self, url: str, timeout: float = ...) -> None: ...

    def close(self) -> None: ...

    def join_office(self, office_id: str, timeout: float) -> None: ...

    def leave_office(self, timeout: float) -> None: ...

    def call(self, event: str, payload: Any, timeout: float) -> Any: ...

    def emit(self, event: str, payload: Any, timeout: float = ...) -> None: ...

    def on(self, event: str, handler: Callable[[Any], Any]) -> None: ...

    def on_rejoined(self, callback: Callable[[str], None]) -> None: ...

    def on_rejoin_failed(self, callback: Callable[[str, SMCPError], None]) -> None: ...
