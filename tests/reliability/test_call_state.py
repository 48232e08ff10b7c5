"""Nothing of a routed call stays in the Server once it is answered, timed out or its
Computer is gone (issue 24: python-socketio kept the ack callback of every timed-out call,
and of every call whose Computer left on another process). Calls across 100 Computers in
10 offices, from raw websockets (a Computer that never answers needs one), a tenth of them
left unanswered to time out, and Computers leaving with calls in flight; the Server's
state is read from its process. Then the same across two Server processes sharing a
Redis, the Computers on the other one."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from typing import Any

import websocket

from smcp_sync.protocol import events

from scale_out.parts import redis_server

from .hostile import joined_websocket
from .parts import wait_until

OFFICES = 10
COMPUTERS_PER_OFFICE = 10
#: Calls an Agent has in flight at most.
IN_FLIGHT = 50
#: The tool-call timeout of a call its Computer leaves unanswered (the Server's buffer is 0).
SHORT_TIMEOUT = 0.3
#: Seconds every call may take to be answered, all together (the slowest machines in CI).
ALL_ANSWERED_WITHIN = 300.0
EVENT = f"42{events.NAMESPACE},"
ACK = f"43{events.NAMESPACE},"


class RawPeer:
    """A joined raw websocket and its reader thread, which answers pings and hands every
    other frame to `on_frame`."""

    def __init__(self, url: str, role: str, name: str, office_id: str) -> None:
        self.name = name
        self.ws = joined_websocket(url, role, name, office_id)
        self.ws.settimeout(None)  # the reader waits for frames until `close`
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"raw-{name}", daemon=True)
        self._reader.start()

    def send(self, frame: str) -> None:
        with self._send_lock:
            self.ws.send(frame)

    def on_frame(self, frame: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self.ws.sock is None:  # closed already
            return
        with contextlib.suppress(OSError):
            self.ws.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader (closing alone does not)
        self.ws.shutdown()
        self._reader.join(10)

    def _read(self) -> None:
        try:
            while True:
                frame = self.ws.recv()
                if frame == "2":
                    self.send("3")
                elif frame:
                    self.on_frame(frame)
        except (OSError, websocket.WebSocketException):
            return


class Computer(RawPeer):
    """Answers every tool call at once, except those whose params say `silent`."""

    def on_frame(self, frame: str) -> None:
        if not frame.startswith(EVENT):
            return
        body = frame[len(EVENT) :]
        ack_id = body[: len(body) - len(body.lstrip("0123456789"))]
        event, payload = json.loads(body[len(ack_id) :])
        if event == events.TOOL_CALL and not payload["params"].get("silent"):
            self.send(ACK + ack_id + json.dumps([{"content": [], "isError": False}]))


class Agent(RawPeer):
    """Sends tool calls with at most `IN_FLIGHT` unanswered; counts answers by code."""

    def __init__(self, *args: Any) -> None:
        self._ids = itertools.count(10)  # 1 was the join
        self._slots = threading.Semaphore(IN_FLIGHT)
        self._cond = threading.Condition()
        self.answers: dict[str, int] = {}
        super().__init__(*args)

    def call(self, computer: str, timeout: float, silent: bool) -> None:
        assert self._slots.acquire(timeout=ALL_ANSWERED_WITHIN)
        req = {
            "agent": self.name, "req_id": "r", "computer": computer, "tool_name": "t",
            "params": {"silent": silent}, "timeout": timeout,
        }  # fmt: skip
        self.send(EVENT + str(next(self._ids)) + json.dumps([events.TOOL_CALL, req]))

    def on_frame(self, frame: str) -> None:
        if not frame.startswith(ACK):
            return
        body = frame[len(ACK) :].lstrip("0123456789")
        answer = json.loads(body)[0]
        kind = str(answer.get("code", "ok"))
        with self._cond:
            self.answers[kind] = self.answers.get(kind, 0) + 1
            self._cond.notify_all()
        self._slots.release()

    def wait_answered(self, count: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: sum(self.answers.values()) >= count, ALL_ANSWERED_WITHIN), self.answers


CALLS = 10_000


def test_no_per_call_state_stays_after_calls_are_answered_time_out_or_lose_their_computer(server_process):
    calls = CALLS
    server = server_process(tool_call_buffer=0.0, limits={"max_connections_per_ip": None})  # 110 clients on 127.0.0.1
    peers: list[RawPeer] = []
    try:
        agents = [Agent(server.url, "agent", f"a{o}", f"o{o}") for o in range(OFFICES)]
        computers = [[Computer(server.url, "computer", f"c{o}-{c}", f"o{o}") for c in range(COMPUTERS_PER_OFFICE)] for o in range(OFFICES)]
        peers += agents + [c for office in computers for c in office]
        threads = server.process.num_threads()

        def drive(office: int) -> None:
            for i in range(calls // OFFICES):
                computer = computers[office][i % COMPUTERS_PER_OFFICE]
                agents[office].call(computer.name, SHORT_TIMEOUT if i % 10 == 0 else 30.0, silent=i % 10 == 0)

        drivers = [threading.Thread(target=drive, args=(o,)) for o in range(OFFICES)]
        for driver in drivers:
            driver.start()
        for driver in drivers:
            driver.join(ALL_ANSWERED_WITHIN)
        for agent in agents:
            agent.wait_answered(calls // OFFICES)
        assert all(agent.answers == {"ok": calls // OFFICES * 9 // 10, "408": calls // OFFICES // 10} for agent in agents)
        state = server.state()
        # one ack-id counter per Computer called (kept while it is connected: a late answer
        # to a timed-out call must not meet a reused id), and no call's callback
        assert state["acks"] == 0 and state["pending"] == 0, state
        assert state["ack_tables"] <= OFFICES * COMPUTERS_PER_OFFICE, state
        assert server.process.num_threads() <= threads + 3  # routed calls hold no thread (the deadline thread)

        # Computers leaving with calls in flight: answered 404 at once, nothing kept
        for agent, office in zip(agents, computers):
            for computer in office:
                agent.call(computer.name, 60.0, silent=True)
        wait_until(lambda: server.state()["pending"] == OFFICES * COMPUTERS_PER_OFFICE, timeout=30)
        for office in computers:
            for computer in office:
                computer.close()
        for agent in agents:
            agent.wait_answered(calls // OFFICES + COMPUTERS_PER_OFFICE)
            assert agent.answers["404"] == COMPUTERS_PER_OFFICE
        assert server.state() == {"ack_tables": 0, "acks": 0, "pending": 0, "auth_checks": 0}
    finally:
        for peer in peers:
            peer.close()


def test_no_per_call_state_stays_for_computers_on_another_server_process(server_process):
    with redis_server() as redis:
        options = {"redis": redis.url, "tool_call_buffer": 0.0, "limits": {"max_connections_per_ip": None}}
        callers, hosts = server_process(**options), server_process(**options)
        peers: list[RawPeer] = []
        try:
            agent = Agent(callers.url, "agent", "a", "o")
            computers = [Computer(hosts.url, "computer", f"c{c}", "o") for c in range(20)]
            peers += [agent, *computers]
            for i in range(200):  # a tenth left to time out
                agent.call(computers[i % 20].name, SHORT_TIMEOUT if i % 10 == 0 else 30.0, silent=i % 10 == 0)
            agent.wait_answered(200)
            assert agent.answers == {"ok": 180, "408": 20}
            state = callers.state()
            assert state["acks"] == 0 and state["pending"] == 0, state
            for computer in computers:
                computer.close()
            # the Computers' sessions end on the other process: nothing of them stays here
            wait_until(lambda: callers.state()["ack_tables"] == 0, timeout=30, what="no ack table left")
            assert callers.state() == {"ack_tables": 0, "acks": 0, "pending": 0, "auth_checks": 0}
        finally:
            for peer in peers:
                peer.close()
            callers.stop()
            hosts.stop()
