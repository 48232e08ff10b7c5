"""`serve(mode="threads")` on a Redis that hangs: the one reactor thread reads every
websocket of the process, and sessions that end meanwhile (clients gone without a word:
their disconnect handlers wait on the office registry's Redis, 2 s each) are closed off
that thread, so the other offices' calls, routed from memory, are answered."""

from __future__ import annotations

import pytest
from reliability.hostile import joined_websocket
from reliability.served import serving

from server.peers import Peer

from .parts import redis_server

pytestmark = pytest.mark.timeout(120)


def test_sessions_ending_while_redis_hangs_hold_up_no_other_office(no_leaks: None) -> None:
    with redis_server() as redis, serving(mode="threads", redis=redis.url) as served:
        computer, agent = peers = [Peer(served.url) for _ in range(2)]
        try:
            assert computer.join("computer", "c1", "office-1") == (True, None)
            assert agent.join("agent", "a1", "office-1") == (True, None)
            computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": data["params"]["x"]}]})
            leaving = [joined_websocket(served.url, "agent", f"a{n}", f"office-{n}") for n in range(2, 7)]
            redis.freeze()
            try:
                for ws in leaving:
                    ws.shutdown()  # gone without a word: the reactor reads the end
                for text in ("routed", "from", "memory"):
                    call = {"agent": "a1", "req_id": text, "computer": "c1", "tool_name": "echo", "params": {"x": text}, "timeout": 5}
                    assert agent.call("client:tool_call", call, timeout=5) == {"content": [{"type": "text", "text": text}]}
            finally:
                redis.thaw()
        finally:
            for peer in peers:
                peer.client.disconnect()
