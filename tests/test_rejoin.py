"""A connection's automatic re-join after a reconnect, against a real Server: a refusal
that may lift is retried until it does, or given up after `RejoinPolicy.give_up_after`
and reported (callback and log), the connection left connected in no office."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Iterator

import pytest
from computer.helpers import wait_until
from office_parts import joined_connection

from smcp_sync import Agent
from smcp_sync.connection import session
from smcp_sync.connection.rejoin import RejoinPolicy
from smcp_sync.connection.session import Connection
from smcp_sync.protocol import ErrorCode
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.server import SMCPServer

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10.0


def agent(url: str, name: str, office: str) -> contextlib.AbstractContextManager[Connection]:
    return joined_connection("agent", name, url, office, timeout=TIMEOUT)


@pytest.fixture
def server(no_leaks) -> Iterator[SMCPServer]:
    with SMCPServer() as server:
        server.start()
        yield server


def taken_while_reconnecting(server: SMCPServer, stack: contextlib.ExitStack) -> Connection:
    """Drop every connection; another Agent takes the office before `first` is back."""
    server.drop_connections()
    assert server.url is not None
    return stack.enter_context(agent(server.url, "other", "o"))


def test_a_refused_rejoin_is_retried_until_the_place_is_free(server, monkeypatch, caplog) -> None:
    monkeypatch.setattr(session, "REJOIN", RejoinPolicy(delay=0.1, delay_max=0.2, give_up_after=30.0))
    caplog.set_level(logging.INFO, logger="smcp_sync")
    rejoined = threading.Event()
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(agent(server.url, "first", "o"))
        first.on_rejoined(lambda office: rejoined.set())
        other = taken_while_reconnecting(server, stack)
        # its first attempt refused (the place is taken) before the place is freed
        wait_until(lambda: "office 'o' already has an agent" in caplog.text, TIMEOUT, "a re-join refused")
        assert not rejoined.is_set() and first.office_id == "o"  # still trying
        other.leave_office(TIMEOUT)
        assert rejoined.wait(TIMEOUT)
        assert first.office_id == "o"
        assert "re-joined office 'o' at attempt" in caplog.text


def test_a_rejoin_still_refused_is_given_up_and_reported(server, monkeypatch, caplog) -> None:
    monkeypatch.setattr(session, "REJOIN", RejoinPolicy(delay=0.1, delay_max=0.2, give_up_after=1.0))
    caplog.set_level(logging.INFO, logger="smcp_sync")
    failures: list[tuple[str, SMCPError]] = []
    failed = threading.Event()
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(agent(server.url, "first", "o"))
        first.on_rejoin_failed(lambda office, error: (failures.append((office, error)), failed.set()))
        taken_while_reconnecting(server, stack)
        assert failed.wait(TIMEOUT)
        [(office, error)] = failures
        assert office == "o" and error.code == ErrorCode.ROOM_FULL
        assert first.connected and first.office_id is None
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert any("could not re-join office 'o'" in message and "attempts" in message for message in errors)


def test_an_agent_reports_a_rejoin_given_up(server, monkeypatch) -> None:
    monkeypatch.setattr(session, "REJOIN", RejoinPolicy(delay=0.1, delay_max=0.2, give_up_after=1.0))
    failures: list[tuple[str, int]] = []
    failed = threading.Event()
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(Agent("first"))
        first.on_rejoin_failed(lambda office, error: (failures.append((office, error.code)), failed.set()))
        with pytest.raises(TypeError):
            first.on_rejoin_failed("not callable")  # type: ignore[arg-type]
        first.connect(server.url, timeout=TIMEOUT)
        first.join_office("o", timeout=TIMEOUT)
        taken_while_reconnecting(server, stack)
        assert failed.wait(TIMEOUT)
        assert failures == [("o", ErrorCode.ROOM_FULL)]
        assert first.connected and first.office_id is None
