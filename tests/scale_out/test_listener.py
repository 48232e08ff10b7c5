"""A node hears the other nodes from its first client on: its Redis listener is
subscribed before that client's connection is accepted, so nothing routed to the client
is published while nobody listens (python-socketio's listener subscribes on a thread of
its own, some time after the first connection starts it)."""

from __future__ import annotations

import contextlib

import pytest

from smcp_sync import Agent, SMCPServer
from smcp_sync.server import RedisOptions
from smcp_sync.server.transport.engine import StoppableRedisManager

from .parts import redis_server
from .test_redis_restart import NO_RECONNECT, TIMEOUT, named_computer

pytestmark = pytest.mark.timeout(60)


def test_a_nodes_first_client_is_accepted_once_its_listener_hears_redis(no_leaks: None) -> None:
    with redis_server() as redis, contextlib.ExitStack() as stack:
        a = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        b = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        a_url, b_url = a.start(), b.start()
        manager = b.sio.manager
        assert isinstance(manager, StoppableRedisManager)
        assert not manager.listening.is_set()  # no client yet: python-socketio has not started it

        stack.enter_context(named_computer(b_url, "first", "pc"))
        assert manager.listening.is_set()  # before the connection was accepted, not some time after

        agent = stack.enter_context(Agent("agent", reconnect=NO_RECONNECT))
        agent.connect(a_url, timeout=TIMEOUT)
        agent.join_office("first", timeout=TIMEOUT)
        # at once, no retry: the call crosses to b and its answer back to a (each node took
        # the other's probe on the shared channel for no message at all)
        assert agent.call_tool("pc", "who", {}, timeout=TIMEOUT).text == "pc"
