"""The office rules as the in-memory registry applies them (no network)."""

from __future__ import annotations

import threading

import pytest

from smcp_sync.protocol.errors import BadRequestError, ErrorCode, ForbiddenError, NotFoundError, OfficeError
from smcp_sync.server import InMemoryRegistry, Session
from smcp_sync.server.offices.office_rules import MAX_IDENTIFIER_LENGTH

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def registry() -> InMemoryRegistry:
    reg = InMemoryRegistry()
    for sid in ("s1", "s2", "s3"):
        reg.add_session(sid)
    return reg


def test_join_records_the_membership_and_finds_it_by_name(registry):
    outcome = registry.join("s1", "computer", "c1", "o1")
    assert outcome.changed and outcome.left is None
    assert outcome.joined == Session(sid="s1", role="computer", name="c1", office_id="o1")
    assert registry.find("o1", "computer", "c1") == outcome.joined
    assert registry.find("o1", "agent", "c1") is None
    assert registry.members("o1") == [outcome.joined]


def test_second_agent_is_refused_with_4101(registry):
    registry.join("s1", "agent", "a1", "o1")
    with pytest.raises(OfficeError) as refused:
        registry.join("s2", "agent", "a2", "o1")
    assert refused.value.code == ErrorCode.ROOM_FULL
    assert [m.name for m in registry.members("o1")] == ["a1"]


def test_computer_moving_office_reports_the_office_it_left(registry):
    registry.join("s1", "computer", "c1", "o1")
    outcome = registry.join("s1", "computer", "c1", "o2")
    assert outcome.left == Session(sid="s1", role="computer", name="c1", office_id="o1")
    assert registry.members("o1") == [] and registry.find("o1", "computer", "c1") is None
    assert registry.find("o2", "computer", "c1").sid == "s1"


def test_rejoining_the_same_office_changes_nothing(registry):
    first = registry.join("s1", "agent", "a1", "o1")
    again = registry.join("s1", "agent", "a1", "o1")
    assert not again.changed and again.joined == first.joined
    assert registry.members("o1") == [first.joined]


def test_rejoining_the_same_office_under_another_name_is_refused(registry):
    registry.join("s1", "computer", "c1", "o1")
    with pytest.raises(ForbiddenError, match="leave it before joining as 'c2'"):
        registry.join("s1", "computer", "c2", "o1")


def test_agent_must_leave_before_joining_another_office(registry):
    registry.join("s1", "agent", "a1", "o1")
    with pytest.raises(ForbiddenError) as refused:
        registry.join("s1", "agent", "a1", "o2")
    assert refused.value.code == ErrorCode.FORBIDDEN
    assert registry.session("s1").office_id == "o1"


def test_role_of_a_session_never_changes_even_after_leaving(registry):
    registry.join("s1", "computer", "c1", "o1")
    registry.leave("s1", "o1")
    with pytest.raises(ForbiddenError, match="role cannot change"):
        registry.join("s1", "agent", "a1", "o1")
    assert registry.session("s1") == Session(sid="s1", role="computer")


def test_names_are_unique_per_office_and_role(registry):
    registry.join("s1", "computer", "same", "o1")
    with pytest.raises(ForbiddenError, match="a computer named 'same' is already in office 'o1'"):
        registry.join("s2", "computer", "same", "o1")
    registry.join("s2", "agent", "same", "o1")  # another role may use the name
    registry.join("s3", "computer", "same", "o2")  # another office too
    assert {(m.role, m.name) for m in registry.members("o1")} == {("computer", "same"), ("agent", "same")}


def test_leave_frees_the_name_and_keeps_the_role(registry):
    registry.join("s1", "computer", "c1", "o1")
    left = registry.leave("s1", "o1")
    assert left.office_id == "o1"
    assert registry.session("s1") == Session(sid="s1", role="computer")
    registry.join("s2", "computer", "c1", "o1")
    assert registry.find("o1", "computer", "c1").sid == "s2"


@pytest.mark.parametrize("joined_office", [None, "o2"])
def test_leaving_an_office_one_is_not_in_is_4103(registry, joined_office):
    if joined_office:
        registry.join("s1", "computer", "c1", joined_office)
    with pytest.raises(OfficeError) as refused:
        registry.leave("s1", "o1")
    assert refused.value.code == ErrorCode.NOT_IN_ROOM


def test_drop_session_returns_its_membership_and_leaves_no_trace(registry):
    registry.join("s1", "agent", "a1", "o1")
    assert registry.drop_session("s1") == Session(sid="s1", role="agent", name="a1", office_id="o1")
    assert registry.session("s1") is None
    assert registry.members("o1") == [] and registry.find("o1", "agent", "a1") is None
    assert registry.drop_session("s1") is None
    assert registry.drop_session("s2") is None  # connected, never joined
    with pytest.raises(NotFoundError):
        registry.join("s1", "agent", "a1", "o1")  # a late join of a departed session


@pytest.mark.parametrize(
    ("name", "office_id", "field"),
    [("", "o1", "name"), ("  ", "o1", "name"), ("c1", "", "office_id"), ("x" * (MAX_IDENTIFIER_LENGTH + 1), "o1", "name")],
)
def test_blank_or_oversized_identifiers_are_400_naming_the_field(registry, name, office_id, field):
    with pytest.raises(BadRequestError, match=rf"\$\.{field}"):
        registry.join("s1", "computer", name, office_id)
    assert registry.session("s1") == Session(sid="s1")


def test_members_are_listed_in_join_order(registry):
    for sid, name in (("s2", "b"), ("s1", "a"), ("s3", "c")):
        registry.join(sid, "computer", name, "o1")
    assert [m.name for m in registry.members("o1")] == ["b", "a", "c"]


def test_concurrent_agents_racing_for_one_office_yield_exactly_one(registry):
    sids = [f"agent-{i}" for i in range(32)]
    for sid in sids:
        registry.add_session(sid)
    barrier = threading.Barrier(len(sids))
    winners: list[str] = []

    def race(sid: str) -> None:
        barrier.wait(5)
        try:
            registry.join(sid, "agent", sid, "contested")
            winners.append(sid)
        except OfficeError as err:
            assert err.code == ErrorCode.ROOM_FULL

    threads = [threading.Thread(target=race, args=(sid,)) for sid in sids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(winners) == 1
    assert [m.sid for m in registry.members("contested")] == winners
