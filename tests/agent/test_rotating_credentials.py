"""Credentials that change (docs/wire/handshake-and-auth.md): `auth=` given as a callable
is asked again at every reconnect, so an Agent and a Computer follow a Server that rotates
its key; given as a dict they keep presenting the old key and are refused."""

from __future__ import annotations

import threading
from typing import Any, Iterator, Mapping

import pytest

from smcp_sync import Agent
from smcp_sync.computer import Computer
from smcp_sync.connection.session import ReconnectPolicy
from smcp_sync.protocol import AuthError
from smcp_sync.server import SMCPServer

pytestmark = pytest.mark.timeout(60)

OFFICE = "office-1"
FAST_RECONNECT = ReconnectPolicy(delay=0.1, delay_max=0.5, randomization=0.0)


class RotatingKey:
    """A Server auth provider whose one accepted key the test replaces."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.refused: list[Any] = []
        self._lock = threading.Lock()

    def authenticate(self, environ: Mapping[str, Any], auth: Any) -> bool:
        accepted = isinstance(auth, Mapping) and auth.get("token") == self.key
        if not accepted:
            with self._lock:
                self.refused.append(auth)
        return accepted


class KeyVault:
    """Where the clients' callables read the current key (a secret manager in real life)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.asked = 0

    def auth(self) -> dict[str, str]:
        self.asked += 1
        return {"token": self.key}


@pytest.fixture
def rotating(no_leaks: None) -> Iterator[tuple[SMCPServer, RotatingKey]]:
    provider = RotatingKey("key-1")
    server = SMCPServer(auth=provider)
    server.start()
    yield server, provider
    server.stop()


def _wait(condition: Any, timeout: float, what: str) -> None:
    event = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        event.wait(0.05)
    raise AssertionError(f"{what} not met within {timeout}s")


def test_with_an_auth_callable_both_roles_reconnect_with_the_new_key_and_rejoin(rotating: Any) -> None:
    server, provider = rotating
    vault = KeyVault("key-1")
    agent = Agent("a1", auth=vault.auth, reconnect=FAST_RECONNECT)
    computer = Computer("c1", reconnect=FAST_RECONNECT)
    try:
        computer.connect(server.url, OFFICE, auth=vault.auth, timeout=10)
        agent.connect(server.url, timeout=10)
        agent.join_office(OFFICE, timeout=10)
        first_sid = agent._connection.sid
        asked_before = vault.asked

        provider.key = vault.key = "key-2"  # rotated on both sides
        server.drop_connections()

        _wait(lambda: agent._connection.sid not in (None, first_sid) and agent.office_id == OFFICE, 20, "agent back")
        _wait(lambda: {s.name for s in agent.list_room(timeout=5)} == {"a1", "c1"}, 20, "computer back in the office")
        assert vault.asked >= asked_before + 2  # asked again at each reconnect
        assert all(refused.get("token") != "key-2" for refused in provider.refused)
    finally:
        agent.close()
        computer.close()


def test_with_an_auth_dict_both_roles_are_refused_after_the_key_rotates(rotating: Any) -> None:
    server, provider = rotating
    agent = Agent("a1", auth={"token": "key-1"}, reconnect=FAST_RECONNECT)
    computer = Computer("c1", reconnect=FAST_RECONNECT)
    try:
        computer.connect(server.url, OFFICE, auth={"token": "key-1"}, timeout=10)
        agent.connect(server.url, timeout=10)
        agent.join_office(OFFICE, timeout=10)

        provider.key = "key-2"
        server.drop_connections()

        # each role retries with the copied old key: refused, again and again
        _wait(lambda: len(provider.refused) >= 4, 20, "four refused reconnects")
        assert {refused.get("token") for refused in provider.refused} == {"key-1"}
        assert not agent._connection.connected  # still retrying, in vain
    finally:
        agent.close()
        computer.close()


def test_a_failing_auth_callable_is_reported_without_its_message(rotating: Any) -> None:
    server, _ = rotating

    def broken() -> dict[str, str]:
        raise RuntimeError("vault down: secret-detail")

    for auth, reason in ((broken, "raised RuntimeError"), (lambda: "key-1", "returned str, not the auth dict")):
        agent = Agent("a1", auth=auth)
        try:
            with pytest.raises(AuthError, match=reason) as refused:
                agent.connect(server.url, timeout=10)
            assert "secret-detail" not in str(refused.value)
        finally:
            agent.close()
    with pytest.raises(TypeError, match="auth must be the Socket.IO auth dict, a callable returning it, or None"):
        Agent("a1", auth="key-1")  # type: ignore[arg-type]
