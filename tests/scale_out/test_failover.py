"""A Server node SIGKILLed under its clients: they reconnect through a proxy to a live
node and end back in their office, answering calls, though their old sessions hold their
places until the dead node's heartbeat expires (the server lets a client take the place
of a session of a dead node; the client retries the refused re-join meanwhile)."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

import pytest
from computer.helpers import wait_until

from smcp_sync import Agent
from smcp_sync.protocol import ErrorCode
from smcp_sync.protocol.errors import SMCPError

from .parts import Node, redis_server
from .proxy import Proxy
from .test_faults import CONVERGE, TIMEOUT, answer_of, computer

pytestmark = pytest.mark.timeout(180)


def address(node: Node) -> tuple[str, int]:
    parts = urlsplit(node.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@pytest.mark.parametrize("kills", [2, pytest.param(6, marks=pytest.mark.once)])
def test_clients_of_a_killed_node_end_back_in_their_office(kills: int) -> None:
    with redis_server() as redis, contextlib.ExitStack() as stack:
        live = [Node(redis.url), Node(redis.url)]
        for node in live:
            stack.callback(node.stop)
        proxy = stack.enter_context(Proxy([address(node) for node in live]))
        agent = stack.enter_context(Agent("agent"))
        agent.connect(proxy.url, timeout=TIMEOUT)
        agent.join_office("f", timeout=TIMEOUT)
        for name in ("pc-0", "pc-1"):
            stack.enter_context(computer(proxy.url, "f", name))
        expected = {("agent", "agent"), ("computer", "pc-0"), ("computer", "pc-1")}

        def whole() -> bool:
            try:
                listed = {(s.role, s.name) for s in agent.list_room(timeout=2.0)}
            except SMCPError:
                return False
            return listed == expected and all(answer_of(agent, pc) == pc for pc in ("pc-0", "pc-1"))

        wait_until(whole, CONVERGE, "office whole at start")
        for kill in range(kills):
            live[0].kill()  # every client is on it: the proxy's first live backend
            replacement = Node(redis.url)
            stack.callback(replacement.stop)
            live = live[1:] + [replacement]
            proxy.backends = [address(node) for node in live]
            wait_until(whole, CONVERGE, f"office whole after kill {kill}")
            assert agent.office_id == "f"
            with Agent("intruder") as intruder:  # the old agent's place is not free twice
                intruder.connect(proxy.url, timeout=TIMEOUT)
                with pytest.raises(SMCPError) as refused:
                    intruder.join_office("f", timeout=TIMEOUT)
                assert refused.value.code == ErrorCode.ROOM_FULL
