"""Conventions shared by Server, Computer and Agent: timeout buffers and the coded
two-value ack of a refused join/leave (readable by other SDKs, typed for ours)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.agent import Agent
from smcp_sync.computer import Computer
from smcp_sync.protocol.conventions import (
    AGENT_TIMEOUT_BUFFER,
    DEFAULT_TOOL_TIMEOUT,
    SERVER_TIMEOUT_BUFFER,
    error_from_ack,
    join_refusal,
)
from smcp_sync.protocol.errors import ErrorCode, ForbiddenError, NotFoundError, OfficeError, SMCPError

pytestmark = pytest.mark.timeout(30)

WIRE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "wire" / "index.md"


def test_the_agent_waits_longer_than_the_server():
    """So a Server-side timeout answer reaches the Agent before the Agent gives up."""
    assert 0 < SERVER_TIMEOUT_BUFFER < AGENT_TIMEOUT_BUFFER


@pytest.mark.parametrize("method", [Agent.call_tool, Agent.submit_tool_call, Computer.call_tool])
def test_a_tool_call_without_a_timeout_has_one_default_in_both_roles(method):
    """The Agent asks for the time the Computer would give itself: the official 0.4.2
    Agent's 60 s (it once asked 30 s of a Computer that defaulted to 60 s)."""
    assert inspect.signature(method).parameters["timeout"].default == DEFAULT_TOOL_TIMEOUT == 60.0


def test_the_wire_page_states_the_default_tool_timeout():
    text = " ".join(WIRE_PAGE.read_text(encoding="utf-8").split())
    stated = re.search(r"has (\d+) s \(`protocol\.conventions\.DEFAULT_TOOL_TIMEOUT`", text)
    assert stated is not None and float(stated.group(1)) == DEFAULT_TOOL_TIMEOUT


def test_a_refusal_is_the_spec_two_value_ack_with_a_code_prefix():
    ack = join_refusal(OfficeError("office o1 already has an agent", code=ErrorCode.ROOM_FULL))
    assert ack == (False, "[4101] office o1 already has an agent")


@pytest.mark.parametrize("code", [int(code) for code in ErrorCode])
def test_every_code_survives_the_ack(code):
    ok, message = join_refusal(SMCPError.for_code(code, "refused here"))
    err = error_from_ack(message)
    assert ok is False
    assert type(err) is type(SMCPError.for_code(code, "")) and (err.code, err.message) == (code, "refused here")


def test_a_message_without_a_code_is_forbidden():
    """The official SDK's refusals are plain text (spec: "Room already has an agent")."""
    err = error_from_ack("Room already has an agent")
    assert type(err) is ForbiddenError and (err.code, err.message) == (403, "Room already has an agent")


@pytest.mark.parametrize("message", [None, "", 0, ["[4101] x"], {"code": 4101}])
def test_a_missing_or_odd_ack_message_is_a_generic_refusal(message):
    err = error_from_ack(message)
    assert type(err) is ForbiddenError and (err.code, err.message) == (403, "request refused")


@pytest.mark.parametrize(
    "message, code, text",
    [
        ("[404] no computer named c1", 404, "no computer named c1"),
        ("[4101]full", 4101, "full"),
        ("[4103] agent [a1] must join first", 4103, "agent [a1] must join first"),
        ("[99] two digits is not a code", 403, "[99] two digits is not a code"),
        ("[12345] five digits is not a code", 403, "[12345] five digits is not a code"),
        ("refused: [4101] not at the start", 403, "refused: [4101] not at the start"),
        ("[4999] unknown code", 4999, "unknown code"),
    ],
)
def test_only_a_leading_code_prefix_is_read(message, code, text):
    err = error_from_ack(message)
    assert (err.code, err.message) == (code, text)


def test_an_unknown_code_in_an_ack_stays_that_code():
    assert type(error_from_ack("[4999] x")) is SMCPError
    assert type(error_from_ack("[404] x")) is NotFoundError


@settings(max_examples=60, deadline=None)
@given(code=st.sampled_from([int(code) for code in ErrorCode]), message=st.text(max_size=60))
def test_error_from_ack_inverts_join_refusal(code, message):
    err = error_from_ack(join_refusal(SMCPError.for_code(code, message))[1])
    assert (err.code, err.message) == (code, message)
