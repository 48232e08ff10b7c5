"""Fixtures: a real SMCPServer on a loopback ephemeral port and raw Socket.IO peers."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from smcp_sync.protocol import extensions
from smcp_sync.server import SMCPServer

from .peers import Peer


@pytest.fixture
def server_factory(no_leaks) -> Iterator[Callable[..., SMCPServer]]:
    """Start SMCPServers with the given options; every one is stopped after the test."""
    started: list[SMCPServer] = []

    def start(**options: Any) -> SMCPServer:
        server = SMCPServer(**options)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(server_factory) -> SMCPServer:
    return server_factory()


@pytest.fixture
def peer_factory(server) -> Iterator[Callable[..., Peer]]:
    """Connect peers (to `server` unless `url=` is given); all are disconnected after the test."""
    peers: list[Peer] = []

    def connect(url: str | None = None, **options: Any) -> Peer:
        peer = Peer(url or server.url, **options)
        peers.append(peer)
        return peer

    yield connect
    for peer in peers:
        peer.close()


@pytest.fixture
def office(peer_factory) -> Callable[..., Peer]:
    """`office(role, name, office_id)`: a connected peer that has joined. A computer plays
    ours: it announces the smcp_sync extensions (`protocol.extensions`)."""

    def joined(role: str, name: str, office_id: str = "office-1", **options: Any) -> Peer:
        if role == "computer":
            options.setdefault("query", f"?{extensions.QUERY_KEY}={extensions.query_value()}")
        peer = peer_factory(**options)
        assert peer.join(role, name, office_id) == (True, None)
        return peer

    return joined
