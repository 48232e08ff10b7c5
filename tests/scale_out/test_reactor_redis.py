"""`serve(mode="threads")` with the office registry on Redis: the one reactor thread reads
every websocket of the process, and what waits on Redis (2 s a request while it hangs)
runs off that thread, in each session's order: the disconnect handlers of sessions that
end (clients gone without a word) or leave their namespace (a DISCONNECT packet, the
connection kept). So the other offices' calls, routed from memory, are answered."""

from __future__ import annotations

import json

import pytest
import websocket
from reliability.hostile import close_all, joined_websocket
from reliability.served import serving

from server.peers import Peer, echo_office

from smcp_sync.protocol.events import (
    ENTER_OFFICE_NOTIFICATION,
    JOIN_OFFICE,
    LEAVE_OFFICE_NOTIFICATION,
    NAMESPACE,
)

from .parts import redis_server

pytestmark = pytest.mark.timeout(120)

#: Three calls of another office, each answered while Redis hangs.
TEXTS = ("routed", "from", "memory")


def test_sessions_ending_while_redis_hangs_hold_up_no_other_office(no_leaks: None) -> None:
    with redis_server() as redis, serving(mode="threads", redis=redis.url) as served, echo_office(served.url) as call:
        leaving = [joined_websocket(served.url, "agent", f"a{n}", f"office-{n}") for n in range(2, 7)]
        redis.freeze()
        try:
            for ws in leaving:
                ws.shutdown()  # gone without a word: the reactor reads the end
            for text in TEXTS:
                assert call(text) == {"content": [{"type": "text", "text": text}]}
        finally:
            redis.thaw()


def test_clients_leaving_their_namespace_while_redis_hangs_hold_up_no_other_office(no_leaks: None) -> None:
    with redis_server() as redis, serving(mode="threads", redis=redis.url) as served, echo_office(served.url) as call:
        leaving = [joined_websocket(served.url, "agent", f"a{n}", f"office-{n}") for n in range(2, 7)]
        try:
            redis.freeze()
            try:
                for ws in leaving:
                    ws.send(f"41{NAMESPACE},")  # a graceful leave: the connection stays open
                for text in TEXTS:
                    assert call(text) == {"content": [{"type": "text", "text": text}]}
            finally:
                redis.thaw()
        finally:
            close_all(leaving)


def test_a_leave_then_a_connect_on_one_session_is_admitted_and_each_leave_announced_once(no_leaks: None) -> None:
    """A DISCONNECT, then at once a CONNECT on the same Engine.IO session, while Redis
    hangs: the CONNECT waits for the leave's disconnect handlers (off the reactor: the
    other office is served meanwhile), so it is admitted, not refused as "already
    connected". A second leave followed at once by the connection's end runs those
    handlers once: the office's Agent hears each leave once."""
    with redis_server() as redis, serving(mode="threads", redis=redis.url) as served, echo_office(served.url) as call:
        computer = joined_websocket(served.url, "computer", "c2", "office-2")
        agent = Peer(served.url)
        try:
            assert agent.join("agent", "a2", "office-2") == (True, None)
            redis.freeze()
            try:
                computer.send(f"41{NAMESPACE},")
                computer.send(f"40{NAMESPACE},{{}}")
                for text in TEXTS:
                    assert call(text) == {"content": [{"type": "text", "text": text}]}
                assert _frame(computer, f"40{NAMESPACE},", f"44{NAMESPACE},").startswith(f'40{NAMESPACE},{{"sid":')
            finally:
                redis.thaw()
            # as another Computer: c2's registry entry may wait for the heartbeat to go
            join = {"role": "computer", "name": "c3", "office_id": "office-2"}
            computer.send(f"42{NAMESPACE},2" + json.dumps([JOIN_OFFICE, join]))
            assert _frame(computer, f"43{NAMESPACE},2") == f"43{NAMESPACE},2[true,null]"
            assert agent.wait_for(LEAVE_OFFICE_NOTIFICATION, computer="c2")
            assert agent.wait_for(ENTER_OFFICE_NOTIFICATION, computer="c3")
            computer.send(f"41{NAMESPACE},")
            computer.shutdown()  # the connection ends while its leave may still run
            agent.wait_for_count(LEAVE_OFFICE_NOTIFICATION, 2)
            leaves = agent.received(LEAVE_OFFICE_NOTIFICATION)
            assert [notice["computer"] for _, notice in leaves] == ["c2", "c3"]
            agent.clear()
            agent.assert_quiet()  # no third leave comes
        finally:
            agent.close()
            close_all([computer])


def _frame(ws: websocket.WebSocket, *starts: str) -> str:
    """The next frame that starts with one of `starts` (notices before it are skipped)."""
    while not (frame := ws.recv()).startswith(starts):
        pass
    return frame
