"""The real parts of an office, each a context manager that closes what it started: a
Server serving on loopback, a Computer connected to an office, an Agent that has joined one,
a bare session of either role (no MCP servers: its handlers answer) that has joined one.

Why: fixtures, test bodies and exit stacks (`stack.enter_context(...)`) across the suite
start these the same way; this is that one way. Options go to the constructors unchanged.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from smcp_sync import Agent, Computer, SMCPServer
from smcp_sync.computer import allow_all
from smcp_sync.connection.session import Connection, Handler

__all__ = ["connected_computer", "joined_agent", "joined_connection", "serving"]


@contextlib.contextmanager
def serving(port: int = 0, **options: Any) -> Iterator[SMCPServer]:
    """An `SMCPServer(**options)` serving on 127.0.0.1:`port` (0: an ephemeral port); see `.url`."""
    with SMCPServer(**options) as server:
        server.start(port=port)
        yield server


@contextlib.contextmanager
def connected_computer(
    name: str, servers: list[dict[str, Any]], url: str, office_id: str, *, timeout: float, **options: Any
) -> Iterator[Computer]:
    """A started `Computer(name, servers, **options)` that has joined `office_id` at `url`
    (`confirm` unless given: `allow_all`, the tests' tools being harmless)."""
    options.setdefault("confirm", allow_all)
    with Computer(name, servers, **options) as computer:
        computer.connect(url, office_id, timeout=timeout)
        yield computer


@contextlib.contextmanager
def joined_agent(name: str, url: str, office_id: str, *, timeout: float, **options: Any) -> Iterator[Agent]:
    """An `Agent(name, **options)` connected to `url` that has joined `office_id`."""
    with Agent(name, **options) as agent:
        agent.connect(url, timeout=timeout)
        agent.join_office(office_id, timeout=timeout)
        yield agent


@contextlib.contextmanager
def joined_connection(
    role: str,
    name: str,
    url: str,
    office_id: str,
    *,
    timeout: float,
    handlers: dict[str, Handler] | None = None,
    **options: Any,
) -> Iterator[Connection]:
    """A bare `Connection` of `role` whose `handlers` answer events, joined to `office_id`."""
    connection = Connection(role, name, **options)
    for event, handler in (handlers or {}).items():
        connection.on(event, handler)
    try:
        connection.connect(url, timeout=timeout)
        connection.join_office(office_id, timeout)
        yield connection
    finally:
        connection.close()
