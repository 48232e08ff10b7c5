"""Routed requests are answered when the Computer's ack arrives, without a Server thread
waiting for each one (`routing`, `pending`, `engine.SocketIOServer._handle_event_internal`),
and the `Future` answers of handlers go through the same refusal mapping as direct ones."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
from smcp_sync.connection.session import Connection, NotConnectedError, ReconnectPolicy

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ErrorCode, ForbiddenError, SMCPError
from smcp_sync.server.offices.answers import answer_with_error_object, answer_with_join_ack

from ..payloads import CLIENT_REQUESTS as REQUESTS

pytestmark = pytest.mark.timeout(60)

IN_FLIGHT = 20


def _server_handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("smcp-server-worker"))


def test_requests_waiting_for_their_computer_hold_no_server_thread_and_get_their_own_answers(server, office):
    computer = office("computer", "c1")
    held: dict[str, threading.Event] = {}
    arrived = threading.Condition()

    def hold(data):
        release = threading.Event()
        with arrived:
            held[data["req_id"]] = release
            arrived.notify_all()
        release.wait(20)
        return {"echo": data["req_id"]}

    computer.answer(events.TOOL_CALL, hold)
    agent = office("agent", "a1")
    answers: dict[str, object] = {}

    def call(req_id: str) -> None:
        answers[req_id] = agent.call(events.TOOL_CALL, {**REQUESTS[events.TOOL_CALL], "req_id": req_id}, timeout=30)

    callers = [threading.Thread(target=call, args=(f"r{i}",)) for i in range(IN_FLIGHT)]
    for caller in callers:
        caller.start()
    with arrived:
        assert arrived.wait_for(lambda: len(held) == IN_FLIGHT, 10)
    assert len(server.pending) == IN_FLIGHT
    # Joins ran on handler threads (now idle or gone); none was added per routed request.
    assert _server_handler_threads() < IN_FLIGHT // 2

    for req_id in sorted(held, reverse=True):  # answered in the reverse order of arrival
        held[req_id].set()
    for caller in callers:
        caller.join(20)
    assert answers == {f"r{i}": {"echo": f"r{i}"} for i in range(IN_FLIGHT)}
    assert len(server.pending) == 0


def test_stopping_the_server_with_requests_in_flight_is_prompt_and_their_callers_see_the_drop(server_factory, peer_factory):
    server = server_factory()
    computer = peer_factory(url=server.url)
    computer.join("computer", "c1", "office-1")
    reached = threading.Semaphore(0)
    release = threading.Event()
    computer.answer(events.GET_DESKTOP, lambda data: reached.release() or release.wait(20) and None)
    agent = Connection("agent", "a1", reconnect=ReconnectPolicy(enabled=False))
    outcomes: list[object] = []

    def call() -> None:
        try:
            outcomes.append(agent.call(events.GET_DESKTOP, REQUESTS[events.GET_DESKTOP], timeout=15))
        except SMCPError as exc:
            outcomes.append(exc)

    try:
        agent.connect(server.url, timeout=5)
        agent.join_office("office-1", timeout=5)
        callers = [threading.Thread(target=call) for _ in range(3)]
        for caller in callers:
            caller.start()
        for _ in callers:
            assert reached.acquire(timeout=5)
        assert len(server.pending) == 3
        started = time.monotonic()
        server.stop(timeout=5)
        for caller in callers:
            caller.join(5)
        assert time.monotonic() - started < 3
    finally:
        release.set()
        agent.close()
    # Every client loses its connection: the callers learn it from the transport, not
    # from a 404 for the Computer that happened to be dropped first.
    assert [type(outcome) for outcome in outcomes] == [NotConnectedError] * 3
    assert len(server.pending) == 0


def _settled(answer: object) -> object:
    assert isinstance(answer, Future)
    return answer.result(timeout=1)


def test_a_future_answer_is_mapped_like_a_direct_one():
    guard = answer_with_error_object("client:test")

    later: Future = Future()
    answer = guard(lambda sid: later)("sid-1")
    assert isinstance(answer, Future) and not answer.done()
    later.set_result({"ok": True})
    assert _settled(answer) == {"ok": True}

    refused: Future = Future()
    refused.set_exception(ForbiddenError("not yours"))
    assert _settled(guard(lambda sid: refused)("sid-1")) == ForbiddenError("not yours").to_wire()

    broken: Future = Future()
    broken.set_exception(RuntimeError("secret internals"))
    error = _settled(guard(lambda sid: broken)("sid-1"))
    assert error["code"] == ErrorCode.INTERNAL_ERROR
    assert "secret" not in error["message"] and "client:test" in error["message"]


def test_a_future_answer_to_a_join_is_the_two_value_ack():
    guard = answer_with_join_ack("server:join_office")
    done: Future = Future()
    done.set_result(None)
    assert _settled(guard(lambda sid: done)("sid-1")) == (True, None)
    refused: Future = Future()
    refused.set_exception(ForbiddenError("no"))
    assert _settled(guard(lambda sid: refused)("sid-1")) == (False, str(ForbiddenError("no")))
