"""Error codes and their exceptions: one class per code, both wire forms read back, the
flat ErrorPayload written (code-specific fields at the top level), pickling keeps
everything, and answers that are not errors are never mistaken for one."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.errors import (
    AuthError,
    BadRequestError,
    BlobError,
    CapabilityNotSupportedError,
    ErrorCode,
    FinderError,
    ForbiddenError,
    InternalError,
    InvalidURIError,
    MCPServerNotFoundError,
    NotFoundError,
    OfficeError,
    SkillError,
    SMCPError,
    SMCPTimeoutError,
    ToolAuthorizationError,
    ToolError,
    ToolTimeoutError,
    VersionMismatchError,
)
from smcp_sync.protocol.models import CallToolResult, GetToolsRet, SMCPTool

pytestmark = pytest.mark.timeout(30)

CLASS_BY_CODE = {
    400: BadRequestError,
    401: AuthError,
    403: ForbiddenError,
    404: NotFoundError,
    408: SMCPTimeoutError,
    500: InternalError,
    4001: ToolError,
    4002: ToolError,
    4003: ToolError,
    4004: ToolTimeoutError,
    4005: ToolError,
    4006: ToolAuthorizationError,
    4007: ToolAuthorizationError,
    4008: VersionMismatchError,
    4014: MCPServerNotFoundError,
    4015: CapabilityNotSupportedError,
    4016: SkillError,
    4017: SkillError,
    4018: BlobError,
    4019: BlobError,
    4101: OfficeError,
    4102: OfficeError,
    4103: OfficeError,
    4104: OfficeError,
    4201: FinderError,
    4202: FinderError,
    4203: FinderError,
    4204: InvalidURIError,
}

#: The examples of spec-0.3/error-handling.md (4008 from the HTTP handshake, 4014 / 4015
#: / 4017 from acks), verbatim.
SPEC_PAYLOADS = [
    """{"code": 4008, "message": "Protocol version mismatch", "server_version": "0.2.0",
        "client_version": "0.1.5", "min_supported": "0.2.0", "max_supported": "0.2.999"}""",
    """{"code": 4014, "message": "MCP Server not registered", "mcp_server": "office_docs"}""",
    """{"code": 4015, "message": "MCP Server does not support 'resources' capability",
        "mcp_server": "office_docs", "capability": "resources"}""",
    """{"code": 4017, "message": "Skill resource not accessible",
        "details": {"reason": "traversal", "rel_path": "../../etc/passwd"}}""",
]

#: The nested form of the v0.2.0 draft (and 0.1.x-era smcp_sync peers).
NESTED_ERROR_OBJECT = """{
  "error": {
    "code": 404,
    "message": "请求的工具不存在",
    "details": {"tool_name": "invalid-tool-name", "computer": "my-computer"}
  }
}"""

DETAILS = st.dictionaries(
    st.text(max_size=10),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=6,
    ),
    max_size=3,
)


def test_the_codes_are_exactly_those_of_the_spec_and_the_finder():
    assert sorted(int(code) for code in ErrorCode) == sorted(CLASS_BY_CODE)


@pytest.mark.parametrize("code, cls", sorted(CLASS_BY_CODE.items()))
def test_every_code_maps_to_its_class(code, cls):
    err = SMCPError.for_code(code, "went wrong", {"computer": "c1"})
    assert type(err) is cls
    assert (err.code, err.message, err.details) == (code, "went wrong", {"computer": "c1"})
    assert type(err.code) is int and str(err) == f"[{code}] went wrong"
    assert isinstance(err, SMCPError)


def test_an_unknown_code_is_a_plain_smcp_error_that_keeps_its_code():
    err = SMCPError.for_code(4999, "future error")
    assert type(err) is SMCPError and err.code == 4999 and err.details == {}


@pytest.mark.parametrize(
    "cls, code",
    [(BadRequestError, 400), (AuthError, 401), (ForbiddenError, 403), (NotFoundError, 404), (SMCPTimeoutError, 408),
     (InternalError, 500), (ToolError, 4001), (ToolTimeoutError, 4004), (ToolAuthorizationError, 4006),
     (VersionMismatchError, 4008), (MCPServerNotFoundError, 4014), (CapabilityNotSupportedError, 4015),
     (SkillError, 4016), (BlobError, 4018), (OfficeError, 4101), (FinderError, 4201), (InvalidURIError, 4204),
     (SMCPError, 500)],
)  # fmt: skip
def test_each_class_has_a_default_code(cls, code):
    assert cls("m").code == code
    assert cls("m", code=4103).code == 4103


def test_the_hierarchy_lets_callers_catch_families():
    assert issubclass(ToolTimeoutError, ToolError) and issubclass(ToolTimeoutError, SMCPTimeoutError)
    assert issubclass(SMCPTimeoutError, TimeoutError)  # builtin timeout handling catches it
    assert issubclass(OfficeError, ForbiddenError) and issubclass(InvalidURIError, FinderError)
    assert issubclass(ToolAuthorizationError, ToolError)
    assert issubclass(MCPServerNotFoundError, NotFoundError)  # what an unknown mcp_server raised before 4014
    with pytest.raises(TimeoutError):
        raise SMCPError.for_code(ErrorCode.TOOL_TIMEOUT, "slow")


def test_to_wire_is_the_flat_payload_and_omits_empty_details():
    assert NotFoundError("no such computer").to_wire() == {"code": 404, "message": "no such computer"}
    err = ToolError("disabled", code=4002, details={"tool_name": "rm"})
    assert err.to_wire() == {"code": 4002, "message": "disabled", "details": {"tool_name": "rm"}}
    assert json.loads(json.dumps(err.to_wire())) == err.to_wire()


def test_code_specific_fields_go_to_the_top_level():
    err = CapabilityNotSupportedError("no completions", fields={"mcp_server": "docs", "capability": "completions"})
    assert err.to_wire() == {"code": 4015, "message": "no completions", "mcp_server": "docs", "capability": "completions"}
    assert (err.mcp_server, err.capability) == ("docs", "completions")
    with pytest.raises(ValueError, match="secret"):
        NotFoundError("m", fields={"secret": "x"})  # anything else belongs in details


@pytest.mark.parametrize("text", SPEC_PAYLOADS)
def test_the_spec_examples_read_back_typed_and_are_written_identically(text):
    wire = json.loads(text)
    err = SMCPError.from_wire(wire)
    assert type(err) is CLASS_BY_CODE[wire["code"]] and err.message == wire["message"]
    assert err.to_wire() == wire


def test_a_version_mismatch_names_both_versions():
    err = SMCPError.from_wire(json.loads(SPEC_PAYLOADS[0]))
    assert isinstance(err, VersionMismatchError)
    assert (err.server_version, err.client_version, err.min_supported, err.max_supported) == (
        "0.2.0", "0.1.5", "0.2.0", "0.2.999"
    )
    assert isinstance(SMCPError.from_wire(json.loads(SPEC_PAYLOADS[1])), MCPServerNotFoundError)
    assert SMCPError.from_wire(json.loads(SPEC_PAYLOADS[1])).mcp_server == "office_docs"


def test_the_nested_form_of_older_peers_reads_back_and_is_written_flat():
    wire = json.loads(NESTED_ERROR_OBJECT)
    err = SMCPError.from_wire(wire)
    assert type(err) is NotFoundError
    assert err.message == "请求的工具不存在"
    assert err.details == {"tool_name": "invalid-tool-name", "computer": "my-computer"}
    assert err.to_wire() == wire["error"]


@pytest.mark.parametrize(
    "flat, cls",
    [
        ({"code": 4001, "message": "no tool"}, ToolError),
        ({"code": 4103, "message": "join first", "req_id": "r1"}, OfficeError),
        ({"code": 404, "message": "gone", "details": {"computer": "c"}, "data": None}, NotFoundError),
        ({"code": 500, "message": "boom", "error_code": "E_INTERNAL"}, InternalError),
    ],
)
def test_flat_payloads_with_extra_envelope_keys_read_back(flat, cls):
    err = SMCPError.from_wire(flat)
    assert type(err) is cls and (err.code, err.message) == (flat["code"], flat["message"])
    assert err.details == (flat.get("details") or {})


def test_nested_extras_are_tolerated_and_bad_details_dropped():
    err = SMCPError.from_wire({"error": {"code": 4204, "message": "bad uri", "details": "not a dict"}, "req_id": "r"})
    assert type(err) is InvalidURIError and err.details == {}


@pytest.mark.parametrize(
    "answer",
    [
        to_wire(CallToolResult.failure(4001, "unknown tool 'x'")),
        to_wire(CallToolResult(meta={"code": 404, "message": "inside meta"})),
        to_wire(GetToolsRet(tools=[SMCPTool(name="t", description="d", params_schema={})], req_id="r")),
        {"code": 404, "message": "a result that has a code field", "content": []},
        {"code": 0, "message": "ok"},
        {"code": 200, "message": "ok", "data": {"tools": []}},
        {"code": "404", "message": "string code"},
        {"code": True, "message": "bool code"},
        {"code": 404},
        {"code": 404, "message": None},
        {"error": "boom"},
        {"error": {"code": 404}},
        {"error": {"message": "no code"}},
        {"error": None, "req_id": "r"},
        {},
        None,
        [{"code": 404, "message": "in a list"}],
        "[404] text",
        404,
    ],
)
def test_answers_that_are_not_errors_are_not_mistaken_for_one(answer):
    assert SMCPError.from_wire(answer) is None


@pytest.mark.parametrize("code", sorted(CLASS_BY_CODE))
def test_pickling_keeps_class_code_message_details_and_fields(code):
    err = SMCPError.for_code(code, "msg", {"req_id": "r1", "nested": {"n": [1, 2]}}, {"mcp_server": "m"})
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert (back.code, back.message, back.details, back.fields, str(back)) == (code, "msg", err.details, err.fields, str(err))


def test_details_are_copied_not_shared():
    given_details = {"tool_name": "t"}
    err = ToolError("m", details=given_details)
    given_details["secret"] = "x"
    assert err.details == {"tool_name": "t"}


def test_repr_names_class_code_and_details():
    assert repr(OfficeError("full", code=4101, details={"office_id": "o"})) == (
        "OfficeError(code=4101, message='full', details={'office_id': 'o'})"
    )


@settings(max_examples=50, deadline=None)
@given(code=st.sampled_from(sorted(CLASS_BY_CODE)), message=st.text(max_size=40), details=DETAILS)
def test_both_wire_forms_round_trip_any_error(code, message, details):
    err = SMCPError.for_code(code, message, details)
    flat = json.loads(json.dumps(err.to_wire()))
    nested = {"error": flat}
    for wire in (flat, nested):
        back = SMCPError.from_wire(wire)
        assert type(back) is type(err) and (back.code, back.message, back.details) == (code, message, details)
