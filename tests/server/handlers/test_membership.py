"""server:join_office / leave_office / list_room and disconnect, over real Socket.IO."""

from __future__ import annotations

import threading

import pytest

from smcp_sync.protocol.conventions import error_from_ack
from smcp_sync.protocol.errors import ErrorCode

from ..peers import wait_until

pytestmark = pytest.mark.timeout(60)


def refusal_code(ack) -> int:
    ok, message = ack
    assert ok is False
    return error_from_ack(message).code


def test_join_is_acked_and_announced_to_the_office_but_not_to_the_joiner(office):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    assert agent.wait_for("notify:enter_office") == {"office_id": "office-1", "computer": "c1"}
    computer.assert_quiet()


def test_agent_join_is_announced_with_the_agent_field_only(office):
    computer = office("computer", "c1")
    office("agent", "a1")
    assert computer.wait_for("notify:enter_office") == {"office_id": "office-1", "agent": "a1"}


def test_second_agent_in_an_office_is_refused_with_4101(office, peer_factory):
    office("agent", "a1")
    intruder = peer_factory()
    assert refusal_code(intruder.join("agent", "a2", "office-1")) == ErrorCode.ROOM_FULL


def test_computer_moving_office_notifies_both_offices(office):
    old_agent = office("agent", "a-old", "old")
    new_agent = office("agent", "a-new", "new")
    computer = office("computer", "mover", "old")
    old_agent.wait_for("notify:enter_office", computer="mover")
    assert computer.join("computer", "mover", "new") == (True, None)
    assert old_agent.wait_for("notify:leave_office") == {"office_id": "old", "computer": "mover"}
    assert new_agent.wait_for("notify:enter_office") == {"office_id": "new", "computer": "mover"}
    listing = new_agent.call("server:list_room", {"agent": "a-new", "req_id": "r", "office_id": "new"})
    assert sorted(s["name"] for s in listing["sessions"]) == ["a-new", "mover"]
    listing = old_agent.call("server:list_room", {"agent": "a-old", "req_id": "r", "office_id": "old"})
    assert [s["name"] for s in listing["sessions"]] == ["a-old"]


def test_rejoining_the_same_office_is_idempotent_and_silent(office):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    agent.wait_for("notify:enter_office")
    agent.clear()
    assert computer.join("computer", "c1", "office-1") == (True, None)
    agent.assert_quiet()


def test_names_are_unique_per_office_and_role(office, peer_factory):
    office("computer", "twin")
    clash = peer_factory()
    ack = clash.join("computer", "twin", "office-1")
    assert refusal_code(ack) == ErrorCode.FORBIDDEN and "already in office" in ack[1]
    assert clash.join("agent", "twin", "office-1") == (True, None)
    assert peer_factory().join("computer", "twin", "office-2") == (True, None)


def test_the_role_of_a_session_cannot_change(office):
    computer = office("computer", "c1")
    assert computer.leave("office-1") == (True, None)
    ack = computer.join("agent", "c1", "office-1")
    assert refusal_code(ack) == ErrorCode.FORBIDDEN and "role cannot change" in ack[1]


def test_leave_notifies_the_office_and_frees_the_name(office, peer_factory):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    agent.wait_for("notify:enter_office")
    assert computer.leave("office-1") == (True, None)
    assert agent.wait_for("notify:leave_office") == {"office_id": "office-1", "computer": "c1"}
    assert peer_factory().join("computer", "c1", "office-1") == (True, None)


def test_leaving_without_being_in_that_office_is_4103(office, peer_factory):
    stranger = peer_factory()
    assert refusal_code(stranger.leave("office-1")) == ErrorCode.NOT_IN_ROOM
    member = office("computer", "c1", "office-1")
    assert refusal_code(member.leave("office-2")) == ErrorCode.NOT_IN_ROOM


def test_disconnect_counts_as_leave_and_leaves_no_ghost(server, office, peer_factory):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    agent.wait_for("notify:enter_office")
    departed_sid = computer.sid
    computer.close()
    assert agent.wait_for("notify:leave_office") == {"office_id": "office-1", "computer": "c1"}
    assert server.registry.session(departed_sid) is None
    listing = agent.call("server:list_room", {"agent": "a1", "req_id": "r", "office_id": "office-1"})
    assert [s["name"] for s in listing["sessions"]] == ["a1"]
    # No stale name, no ghost room membership: a newcomer takes the name, and office
    # broadcasts reach exactly the members.
    newcomer = office("computer", "c1")
    assert agent.wait_for("notify:enter_office", computer="c1")
    room = server.sio.manager.rooms["/smcp"].get("office:office-1", {})
    assert set(room) == {agent.sid, newcomer.sid}


def test_agent_disconnect_frees_the_office_for_another_agent(office, peer_factory):
    computer = office("computer", "c1")
    agent = office("agent", "a1")
    agent.close()
    assert computer.wait_for("notify:leave_office") == {"office_id": "office-1", "agent": "a1"}
    assert peer_factory().join("agent", "a2", "office-1") == (True, None)


def test_list_room_lists_the_callers_office(office):
    agent = office("agent", "a1")
    computer = office("computer", "c1")
    office("computer", "elsewhere", "office-2")
    listing = agent.call("server:list_room", {"agent": "a1", "req_id": "req-7", "office_id": "office-1"})
    assert listing == {
        "sessions": [
            {"sid": agent.sid, "name": "a1", "role": "agent", "office_id": "office-1"},
            {"sid": computer.sid, "name": "c1", "role": "computer", "office_id": "office-1"},
        ],
        "req_id": "req-7",
    }


def test_list_room_of_another_office_is_4104(office):
    agent = office("agent", "a1")
    office("computer", "c2", "office-2")
    answer = agent.call("server:list_room", {"agent": "a1", "req_id": "r", "office_id": "office-2"})
    assert answer["code"] == ErrorCode.CROSS_ROOM_ACCESS
    assert "office-2" not in str(answer.get("details", {}).get("sessions", ""))


@pytest.mark.parametrize(
    ("who", "payload", "code"),
    [
        ("stranger", {"agent": "a1", "req_id": "r", "office_id": "office-1"}, ErrorCode.NOT_IN_ROOM),
        ("computer", {"agent": "c1", "req_id": "r", "office_id": "office-1"}, ErrorCode.FORBIDDEN),
        ("agent", {"agent": "someone-else", "req_id": "r", "office_id": "office-1"}, ErrorCode.FORBIDDEN),
    ],
)
def test_list_room_refusals(office, peer_factory, who, payload, code):
    peers = {"agent": office("agent", "a1"), "computer": office("computer", "c1"), "stranger": peer_factory()}
    assert peers[who].call("server:list_room", payload)["code"] == code


def test_notifications_never_cross_offices(office):
    watcher = office("agent", "watcher", "office-2")
    bystander = office("computer", "bystander", "office-2")
    agent = office("agent", "a1", "office-1")
    computer = office("computer", "c1", "office-1")
    watcher.wait_for("notify:enter_office", computer="bystander")
    watcher.clear()
    bystander.clear()
    computer.call("server:update_tool_list", {"computer": "c1"})
    agent.call("server:tool_call_cancel", {"agent": "a1", "req_id": "r1"})
    computer.leave("office-1")
    agent.wait_for("notify:leave_office", computer="c1")
    watcher.call("server:list_room", {"agent": "watcher", "req_id": "r", "office_id": "office-2"})  # round trip
    watcher.assert_quiet()
    bystander.assert_quiet()


def test_concurrent_joins_and_leaves_keep_the_registry_consistent(server, peer_factory):
    """Many peers join, move, leave and race for agent seats from many threads at once."""
    offices = ["o-a", "o-b", "o-c"]
    computers = [peer_factory() for _ in range(12)]
    agents = [peer_factory() for _ in range(9)]
    errors: list[BaseException] = []
    agent_seats: dict[str, list[str]] = {o: [] for o in offices}
    lock = threading.Lock()

    def churn_computer(i: int, peer) -> None:
        name = f"c{i}"
        for round_ in range(7):
            target = offices[(i + round_) % len(offices)]
            assert peer.join("computer", name, target) == (True, None)
            if round_ % 3 == 2:
                assert peer.leave(target) == (True, None)

    def race_agent(i: int, peer) -> None:
        target = offices[i % len(offices)]
        ack = peer.join("agent", f"a{i}", target)
        if ack == (True, None):
            with lock:
                agent_seats[target].append(peer.sid)
        else:
            assert refusal_code(ack) == ErrorCode.ROOM_FULL

    def guarded(fn, *args) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # collected and re-raised on the test thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(churn_computer, i, p)) for i, p in enumerate(computers)]
    threads += [threading.Thread(target=guarded, args=(race_agent, i, p)) for i, p in enumerate(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors

    # Each computer ended its 7 rounds in a known place (the last round joins, no leave).
    expected = {f"c{i}": offices[(i + 6) % len(offices)] for i in range(len(computers))}
    for office_id in offices:
        members = server.registry.members(office_id)
        assert len(agent_seats[office_id]) == 1
        assert [m.sid for m in members if m.role == "agent"] == agent_seats[office_id]
        assert sorted(m.name for m in members if m.role == "computer") == sorted(
            n for n, o in expected.items() if o == office_id
        )
        room = set(server.sio.manager.rooms["/smcp"].get(f"office:{office_id}", {}))
        assert room == {m.sid for m in members}

    for peer in computers[:6] + agents:
        peer.close()
    wait_until(lambda: sum(len(server.registry.members(o)) for o in offices) == 6)
