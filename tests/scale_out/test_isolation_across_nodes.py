"""The office isolation suite (tests/reliability/test_isolation.py) across two Server
nodes sharing a real Redis: participants connect to the nodes in turn, so offices,
calls, `list_room` and notifications all span both.

Across nodes a notification reaches the other node through Redis pub/sub, after the
sender's step has returned; so after each step every participant must have received
what the model expects (an invariant that waits for it), or a later step on the other
node could overtake it (a leave there would then rightly miss it).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test
from reliability.test_isolation import Offices

from smcp_sync import SMCPServer
from smcp_sync.server import RedisOptions

from .parts import redis_server

NODES = 2


class OfficesAcrossNodes(Offices):
    redis_url = ""

    def open_servers(self) -> list[SMCPServer]:
        servers = []
        for _ in range(NODES):
            server = SMCPServer(redis=RedisOptions(self.redis_url))
            servers.append(server)
            server.start()
        return servers

    @invariant()
    def notifications_arrived(self) -> None:
        for participant, expected in self.expected.items():
            assert self._received(participant) == expected, participant.name


@pytest.mark.timeout(150)
def test_notifications_and_calls_never_cross_an_office_across_nodes(no_leaks) -> None:
    with redis_server() as redis:
        OfficesAcrossNodes.redis_url = redis.url
        run_state_machine_as_test(
            OfficesAcrossNodes,
            settings=settings(
                max_examples=3,
                stateful_step_count=30,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
