"""Routing of every client:* event to the named Computer of the caller's office."""

from __future__ import annotations

import threading
import time

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ErrorCode

from ..payloads import CLIENT_REQUESTS as REQUESTS

pytestmark = pytest.mark.timeout(60)


def with_fields(event: str, **changes):
    return {**REQUESTS[event], **changes}


@pytest.mark.parametrize("event", sorted(REQUESTS))
def test_request_is_forwarded_unchanged_and_the_answer_relayed_unchanged(office, event):
    computer = office("computer", "c1")
    seen = []
    answer = {"req_id": "r", "anything": [1, "two", {"three": None}], "unicode": "数据"}
    computer.answer(event, lambda data: seen.append(data) or answer)
    agent = office("agent", "a1")
    request = {**REQUESTS[event], "x-extension": {"kept": True}}
    assert agent.call(event, request) == answer
    assert seen == [request]


def test_a_multi_value_answer_is_relayed_as_is(office):
    computer = office("computer", "c1")
    computer.answer(events.GET_TOOLS, lambda data: (1, "two", None))
    agent = office("agent", "a1")
    assert agent.call(events.GET_TOOLS, REQUESTS[events.GET_TOOLS]) == (1, "two", None)


def test_a_nested_error_of_an_older_computer_is_relayed_flat(office):
    computer = office("computer", "c1")
    nested = {"error": {"code": 4201, "message": "no such document", "details": {"doc_ref": "d"}}}
    computer.answer(events.READ_RESOURCE, lambda data: nested)
    computer.answer(events.GET_RESOURCES, lambda data: nested["error"] | {"mcp_server": "docs", "req_id": "r"})
    agent = office("agent", "a1")
    assert agent.call(events.READ_RESOURCE, REQUESTS[events.READ_RESOURCE]) == nested["error"]
    flat = agent.call(events.GET_RESOURCES, REQUESTS[events.GET_RESOURCES])  # already flat: as it came
    assert flat == nested["error"] | {"mcp_server": "docs", "req_id": "r"}


def test_requests_reach_only_the_named_computer(office):
    hits = {"c1": 0, "c2": 0}
    for name in hits:
        peer = office("computer", name)
        peer.answer(events.GET_TOOLS, lambda data, name=name: hits.__setitem__(name, hits[name] + 1) or {"who": name})
    agent = office("agent", "a1")
    assert agent.call(events.GET_TOOLS, with_fields(events.GET_TOOLS, computer="c2")) == {"who": "c2"}
    assert hits == {"c1": 0, "c2": 1}


def test_unknown_computer_is_404(office):
    agent = office("agent", "a1")
    answer = agent.call(events.GET_TOOLS, with_fields(events.GET_TOOLS, computer="nobody"))
    assert answer["code"] == ErrorCode.NOT_FOUND
    assert "nobody" in answer["message"]


def test_a_computer_of_another_office_is_404_like_an_unknown_one(office):
    elsewhere = office("computer", "c1", "office-2")
    elsewhere.answer(events.GET_TOOLS, lambda data: pytest.fail("crossed offices"))
    agent = office("agent", "a1", "office-1")
    answer = agent.call(events.GET_TOOLS, REQUESTS[events.GET_TOOLS])
    assert answer == {
        "code": ErrorCode.NOT_FOUND,
        "message": "no computer named 'c1' in this office",
        "details": {"computer": "c1"},
    }


@pytest.mark.parametrize("event", sorted(REQUESTS))
def test_caller_not_in_an_office_is_4103(office, peer_factory, event):
    office("computer", "c1")
    stranger = peer_factory()
    assert stranger.call(event, REQUESTS[event])["code"] == ErrorCode.NOT_IN_ROOM


def test_caller_that_is_not_an_agent_is_403(office):
    office("computer", "c1")
    other = office("computer", "a1")  # a computer claiming the agent's name
    answer = other.call(events.GET_TOOLS, REQUESTS[events.GET_TOOLS])
    assert answer["code"] == ErrorCode.FORBIDDEN


def test_agent_field_must_be_the_callers_joined_name(office):
    computer = office("computer", "c1")
    computer.answer(events.TOOL_CALL, lambda data: pytest.fail("should not be forwarded"))
    agent = office("agent", "a1")
    answer = agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, agent="impostor"))
    assert answer["code"] == ErrorCode.FORBIDDEN
    assert "impostor" in answer["message"]


@pytest.mark.parametrize("timeout", [0, -1, 86401])
def test_tool_call_timeout_out_of_range_is_400(office, timeout):
    office("computer", "c1")
    agent = office("agent", "a1")
    answer = agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, timeout=timeout))
    assert answer["code"] == ErrorCode.BAD_REQUEST
    assert "$.timeout" in answer["message"]


def test_tool_call_waits_its_timeout_plus_the_buffer_then_answers_408(server_factory, peer_factory, office):
    server = server_factory(tool_call_buffer=0.3)
    computer = peer_factory(url=server.url)
    computer.join("computer", "c1", "office-1")
    release = threading.Event()
    computer.answer(events.TOOL_CALL, lambda data: release.wait(10) and None)
    agent = peer_factory(url=server.url)
    agent.join("agent", "a1", "office-1")
    started = time.monotonic()
    answer = agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, timeout=0.5))
    elapsed = time.monotonic() - started
    release.set()
    assert answer["code"] == ErrorCode.TIMEOUT
    assert answer["details"] == {"computer": "c1", "timeout": 0.8}
    assert 0.75 <= elapsed < 2.0
    assert len(server.pending) == 0


def test_a_slow_tool_call_within_its_timeout_is_not_cut_by_the_default(server_factory, peer_factory):
    server = server_factory(request_timeout=0.2, tool_call_buffer=0.5)
    computer = peer_factory(url=server.url)
    computer.join("computer", "c1", "office-1")
    computer.answer(events.TOOL_CALL, lambda data: time.sleep(0.5) or {"content": [], "isError": False})
    agent = peer_factory(url=server.url)
    agent.join("agent", "a1", "office-1")
    answer = agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, timeout=1))
    assert answer == {"content": [], "isError": False}


def test_other_requests_use_the_configurable_default_timeout(server_factory, peer_factory):
    server = server_factory(request_timeout=0.3)
    computer = peer_factory(url=server.url)
    computer.join("computer", "c1", "office-1")
    release = threading.Event()
    computer.answer(events.GET_DESKTOP, lambda data: release.wait(10) and None)
    agent = peer_factory(url=server.url)
    agent.join("agent", "a1", "office-1")
    started = time.monotonic()
    answer = agent.call(events.GET_DESKTOP, REQUESTS[events.GET_DESKTOP])
    release.set()
    assert answer["code"] == ErrorCode.TIMEOUT
    assert time.monotonic() - started < 1.5


def test_computer_disconnecting_mid_call_fails_the_call_at_once(server, office):
    computer = office("computer", "c1")
    reached = threading.Event()
    release = threading.Event()
    computer.answer(events.TOOL_CALL, lambda data: reached.set() or release.wait(10) and None)
    agent = office("agent", "a1")
    answers = []
    caller = threading.Thread(
        target=lambda: answers.append(agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, timeout=60), timeout=30))
    )
    caller.start()
    assert reached.wait(5)
    started = time.monotonic()
    computer.close()
    caller.join(10)
    release.set()
    assert answers, "the Agent got no answer"
    assert time.monotonic() - started < 2.0
    assert answers[0]["code"] == ErrorCode.NOT_FOUND
    assert "disconnected" in answers[0]["message"]
    assert len(server.pending) == 0


def test_concurrent_calls_are_each_answered_with_their_own_result(office):
    computer = office("computer", "c1")
    computer.answer(events.TOOL_CALL, lambda data: {"echo": data["req_id"]})
    agent = office("agent", "a1")
    results: dict[str, object] = {}

    def call(i: int) -> None:
        results[f"r{i}"] = agent.call(events.TOOL_CALL, with_fields(events.TOOL_CALL, req_id=f"r{i}"))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {f"r{i}": {"echo": f"r{i}"} for i in range(40)}
