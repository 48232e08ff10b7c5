"""The wire contract of the codec: every model round-trips, bad payloads are a 400 that
names the offending field by its wire path, and nothing else ever escapes `from_wire`.

The property tests read the models' type hints, so a model added later is covered
without touching this file. The fixtures at the end are the spec's JSON examples and
configs in the official Python SDK's dump format (a2c-smcp 0.1.6 over mcp 1.x).
"""

from __future__ import annotations

import copy
import functools
import json
import types
import typing
from typing import Any, Literal, Union

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcp_sync.protocol import models
from smcp_sync.protocol.codec import from_wire, to_wire
from smcp_sync.protocol.errors import BadRequestError, ErrorCode
from smcp_sync.protocol.models import (
    A2C_TOOL_META,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    CommandInput,
    CompleteReq,
    DPECatalogue,
    DPEDocument,
    DPEElementDetail,
    DPEPage,
    EmbeddedResource,
    GetComputerConfigRet,
    GetDeskTopReq,
    GetFinderReq,
    ImageContent,
    IsoDuration,
    MCPServerConfig,
    MCPServerInput,
    PickStringInput,
    PromptReference,
    PromptStringInput,
    ReadResourceRet,
    ResourceContents,
    ResourceLink,
    ResourceTemplateReference,
    SMCPTool,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
    StreamableHttpServerParameters,
    TextContent,
    TextResourceContents,
    ToolCallReq,
    ToolMeta,
)
from smcp_sync.protocol.models.config import PickStringChoice, PickStringOption

pytestmark = pytest.mark.timeout(60)

ALL_MODELS = sorted(
    {obj for obj in vars(models).values() if isinstance(obj, type) and attrs.has(obj)}, key=lambda cls: cls.__name__
)
NONE = type(None)
PROPERTY = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- reading the models' types -----------------------------------------------------


def wire_name(attribute: attrs.Attribute) -> str:
    return attribute.metadata.get("wire", attribute.name)


def is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def non_null(tp: Any) -> tuple[Any, bool]:
    """`tp` without `None`, and whether `None` was allowed."""
    if not is_union(tp):
        return tp, False
    members = tuple(a for a in typing.get_args(tp) if a is not NONE)
    inner = members[0] if len(members) == 1 else Union[members]
    return inner, len(members) < len(typing.get_args(tp))


def member_for(union: Any, wire: Any) -> type:
    """The member of a model union the codec picks for `wire` (by `type`, else text/blob)."""
    members = typing.get_args(union)
    if union == ResourceContents:
        return BlobResourceContents if "blob" in wire else TextResourceContents
    if union == PickStringChoice:  # a plain string or an object: no tag
        return str if isinstance(wire, str) else PickStringOption
    return next(cls for cls in members if attrs.fields_dict(cls)["type"].default == wire["type"])


# -- generating valid instances ----------------------------------------------------

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
# Whole microseconds: what a timedelta (and so an ISO 8601 duration) can carry exactly.
DURATIONS = st.integers(0, 10**11).map(lambda micros: IsoDuration(micros / 10**6))


def strategy_for(tp: Any) -> st.SearchStrategy:
    simple = {
        Any: JSON,
        NONE: st.none(),
        IsoDuration: DURATIONS,
        str: st.text(max_size=16),
        bool: st.booleans(),
        int: st.integers(-(2**53), 2**53),
        float: st.floats(allow_nan=False, allow_infinity=False),
    }
    if tp in simple:
        return simple[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return st.sampled_from(args)
    if is_union(tp):
        return st.one_of([strategy_for(arg) for arg in args])
    if origin is list:
        return st.lists(strategy_for(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), strategy_for(args[1]), max_size=3)
    if attrs.has(tp):
        return model_strategy(tp)
    raise TypeError(f"no strategy for {tp!r}")


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def model_strategy(cls: type) -> st.SearchStrategy:
    return st.builds(cls, **{a.name: strategy_for(hints(cls)[a.name]) for a in attrs.fields(cls)})


# -- walking a wire value alongside its type ---------------------------------------


@attrs.frozen
class Site:
    """One value inside a wire payload: where it is, its wire path and its declared type."""

    keys: tuple[Any, ...]
    path: str
    type: Any
    nullable: bool


@attrs.frozen
class WireObject:
    """One model object inside a wire payload."""

    cls: type
    value: dict
    keys: tuple[Any, ...]
    path: str
    via_union: bool


def walk(tp: Any, wire: Any, keys: tuple = (), path: str = "$", via_union: bool = False):
    """Yield a `WireObject` for every model object and a `Site` for every typed value below it."""
    tp, _ = non_null(tp)
    if wire is None or tp is Any:
        return
    if is_union(tp):
        yield from walk(member_for(tp, wire), wire, keys, path, via_union=True)
    elif attrs.has(tp):
        yield WireObject(tp, wire, keys, path, via_union)
        for attribute in attrs.fields(tp):
            key = wire_name(attribute)
            if key not in wire or (via_union and key == "type"):
                continue
            yield from _site(hints(tp)[attribute.name], wire[key], keys + (key,), f"{path}.{key}")
    elif typing.get_origin(tp) is list:
        for index, item in enumerate(wire):
            yield from _site(typing.get_args(tp)[0], item, keys + (index,), f"{path}[{index}]")
    elif typing.get_origin(tp) is dict:
        for key, item in wire.items():
            yield from _site(typing.get_args(tp)[1], item, keys + (key,), f"{path}[{key!r}]")


def _site(tp: Any, wire: Any, keys: tuple, path: str):
    inner, nullable = non_null(tp)
    if inner is not Any:
        yield Site(keys, path, inner, nullable)
    yield from walk(tp, wire, keys, path)


def replaced(wire: Any, keys: tuple, value: Any) -> Any:
    """A deep copy of `wire` with the value at `keys` replaced (or deleted when `value` is `DELETE`)."""
    if not keys:
        return value
    result = copy.deepcopy(wire)
    target = result
    for key in keys[:-1]:
        target = target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return result


DELETE = object()


# -- generating wrong values -------------------------------------------------------

HUGE_STRING = "长" * 1_000_000


def deeply_nested(depth: int, container: type) -> Any:
    value = container()
    for _ in range(depth):
        value = [value] if container is list else {"a": value}
    return value


STRINGS = st.text(max_size=20) | st.just(HUGE_STRING)
KINDS = {
    "null": st.none(),
    "bool": st.booleans(),
    "int": st.integers(),
    "float": st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    "str": STRINGS,
    "list": st.lists(JSON, max_size=3) | st.just(deeply_nested(500, list)),
    "object": st.dictionaries(st.text(max_size=6), JSON, max_size=3) | st.just(deeply_nested(500, dict)),
}
BAD_DURATIONS = st.sampled_from(["soon", "30", "PT", "P1Y2", "30 seconds", "", HUGE_STRING])


def accepted_kinds(tp: Any) -> set[str]:
    """The JSON kinds a declared type accepts (an object is never "wrong" for a model: it
    would be judged field by field)."""
    simple = {str: {"str"}, int: {"int"}, float: {"int", "float"}, bool: {"bool"}, IsoDuration: {"int", "float", "str"}}
    if tp in simple:
        return simple[tp]
    if typing.get_origin(tp) is Literal:
        return {"str"}  # wrong strings are drawn separately
    if typing.get_origin(tp) is list:
        return {"list"}
    if tp == PickStringChoice:
        return {"str", "object"}
    return {"object"}


def wrong_values(site: Site) -> st.SearchStrategy:
    refused = set(KINDS) - accepted_kinds(site.type) - ({"null"} if site.nullable else set())
    choices = [KINDS[kind] for kind in sorted(refused)]
    if site.type is IsoDuration:
        choices.append(BAD_DURATIONS)
    if typing.get_origin(site.type) is Literal:
        choices.append(STRINGS.filter(lambda text: text not in typing.get_args(site.type)))
    return st.one_of(choices)


def assert_bad_request(cls: type, wire: Any, path: str) -> BadRequestError:
    """`from_wire` refuses `wire` with one 400 problem located at `path`."""
    with pytest.raises(BadRequestError) as caught:
        from_wire(cls, wire)
    err = caught.value
    assert err.code == ErrorCode.BAD_REQUEST == 400
    problems = err.details["errors"]
    assert len(problems) == 1 and problems[0].endswith(f" @ {path}"), problems
    assert problems[0] in err.message and err.message.startswith("invalid ")
    return err


def assert_wire_keys(cls: type, obj: Any, wire: dict) -> None:
    """Output keys are wire names; unset optional fields are absent, `keep_none` ones kept."""
    expected = {
        wire_name(a)
        for a in attrs.fields(cls)
        if not (getattr(obj, a.name) is None and a.default is None and not a.metadata.get("keep_none"))
    }
    assert set(wire) == expected


# -- properties over every model ---------------------------------------------------


def model_id(cls: type) -> str:
    return cls.__name__


UNKNOWN_KEYS = st.dictionaries(st.text(max_size=8).map("x-unknown-{}".format), JSON, max_size=2)


@pytest.mark.parametrize("cls", ALL_MODELS, ids=model_id)
@PROPERTY
@given(data=st.data())
def test_every_model_round_trips_and_ignores_unknown_keys(cls, data):
    obj = data.draw(model_strategy(cls))
    wire = to_wire(obj)
    through_json = json.loads(json.dumps(wire, allow_nan=False))
    assert from_wire(cls, through_json) == obj
    assert to_wire(from_wire(cls, through_json)) == wire
    objects = [found for found in walk(cls, through_json) if isinstance(found, WireObject)]
    for found in objects:
        assert_wire_keys(found.cls, from_wire(found.cls, found.value), found.value)
    for found in objects:
        found.value.update(data.draw(UNKNOWN_KEYS))
    assert from_wire(cls, through_json) == obj


def corruptions(cls: type, wire: Any) -> list[tuple[tuple, st.SearchStrategy, str]]:
    """Every single-place way to break `wire`: (where, what to put there, expected error path)."""
    found = list(walk(cls, wire))
    not_an_object = st.one_of([KINDS[kind] for kind in sorted(set(KINDS) - {"object"})])
    wrong = [(site.keys, wrong_values(site), site.path) for site in found if isinstance(site, Site)]
    missing = [
        (obj.keys + (wire_name(a),), st.just(DELETE), f"{obj.path}.{wire_name(a)}")
        for obj in found
        if isinstance(obj, WireObject)
        for a in attrs.fields(obj.cls)
        # text/blob tell resource contents apart: covered by their own test
        if a.default is attrs.NOTHING and not (obj.via_union and a.name in ("text", "blob"))
    ]
    return [((), not_an_object, "$"), *wrong, *missing]


@pytest.mark.parametrize("cls", ALL_MODELS, ids=model_id)
@PROPERTY
@given(data=st.data())
def test_a_wrong_or_missing_field_is_a_400_naming_its_wire_path(cls, data):
    wire = to_wire(data.draw(model_strategy(cls)))
    keys, values, path = data.draw(st.sampled_from(corruptions(cls, wire)))
    bad = data.draw(values)
    err = assert_bad_request(cls, replaced(wire, keys, bad), path)
    assert len(err.message) < 500
    if bad is DELETE:
        assert err.message == f"invalid {cls.__name__}: required field missing @ {path}"


@pytest.mark.parametrize("cls", ALL_MODELS, ids=model_id)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_arbitrary_json_is_a_model_or_a_400_never_another_exception(cls, data):
    keys = [wire_name(a) for a in attrs.fields(cls)] + ["meta", "_meta", "unknown"]
    wire = data.draw(st.one_of(JSON, st.dictionaries(st.sampled_from(keys), JSON)))
    try:
        assert isinstance(from_wire(cls, wire), cls)
    except BadRequestError as err:
        assert err.code == 400
        assert err.details["errors"] and all(" @ $" in problem for problem in err.details["errors"])


# -- strict primitives -------------------------------------------------------------

CALL = {"agent": "a", "req_id": "r1", "computer": "c", "tool_name": "t", "params": {}, "timeout": 30}


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("agent", 1, "expected str, got int"),
        ("tool_name", None, "expected str, got NoneType"),
        ("timeout", "30", "expected float, got str"),
        ("timeout", True, "expected float, got bool"),
        ("params", [], "expected a mapping"),
        ("params", "{}", "expected a mapping"),
    ],
)
def test_tool_call_primitives_are_strict(field, value, why):
    err = assert_bad_request(ToolCallReq, {**CALL, field: value}, f"$.{field}")
    assert why in err.message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_non_finite_or_overflowing_numbers_are_refused(value):
    err = assert_bad_request(ToolCallReq, {**CALL, "timeout": value}, "$.timeout")
    assert "finite" in err.message or "out of range" in err.message


def test_an_int_is_a_float_but_a_float_is_not_an_int_and_a_bool_is_neither():
    assert from_wire(ToolCallReq, CALL).timeout == 30.0
    finder = {"agent": "a", "req_id": "r", "computer": "c"}
    assert_bad_request(GetFinderReq, {**finder, "limit": 5.7}, "$.limit")
    assert_bad_request(GetFinderReq, {**finder, "limit": 5.0}, "$.limit")
    assert_bad_request(GetFinderReq, {**finder, "offset": True}, "$.offset")
    assert_bad_request(CallToolResult, {"isError": 1}, "$.isError")
    assert from_wire(GetFinderReq, {**finder, "limit": 5}).limit == 5


@pytest.mark.parametrize("value", ["abc", {"a": "b"}, 3])
def test_a_list_field_takes_only_an_array(value):
    """A string is not a list of its characters, nor an object a list of its keys."""
    err = assert_bad_request(models.StdioServerParameters, {"command": "python", "args": value}, "$.args")
    assert "expected an array" in err.message
    assert_bad_request(ToolMeta, {"tags": "browser"}, "$.tags")


def test_a_literal_refuses_other_values():
    for role in ("boss", "", 1, ["agent"]):
        err = assert_bad_request(models.EnterOfficeReq, {"role": role, "name": "n", "office_id": "o"}, "$.role")
        assert "expected one of 'computer', 'agent'" in err.message


def test_every_problem_is_reported_at_once():
    with pytest.raises(BadRequestError) as caught:
        from_wire(ToolCallReq, {"agent": 1, "req_id": "r", "tool_name": "t", "params": {}, "timeout": "x"})
    assert sorted(caught.value.details["errors"]) == [
        "expected float, got str @ $.timeout",
        "expected str, got int @ $.agent",
        "required field missing @ $.computer",
    ]


@pytest.mark.parametrize("payload", [None, [], "text", 3, True])
def test_a_payload_that_is_not_an_object_is_a_400(payload):
    err = assert_bad_request(ToolCallReq, payload, "$")
    assert "expected an object" in err.message


# -- optional fields, wire names and MCP `_meta` / `meta` ----------------------------


def test_unset_optional_fields_are_absent_and_wire_names_are_used():
    assert to_wire(TextContent(text="hi")) == {"type": "text", "text": "hi"}
    assert to_wire(GetDeskTopReq(agent="a", req_id="r", computer="c")) == {"agent": "a", "req_id": "r", "computer": "c"}
    image = ImageContent(data="QUJD", mime_type="image/png", meta={"k": 1})
    assert to_wire(image) == {"type": "image", "data": "QUJD", "mimeType": "image/png", "_meta": {"k": 1}}
    done = models.CompleteRet(completion=models.Completion(values=["a"], has_more=False), req_id="r")
    assert to_wire(done) == {"completion": {"values": ["a"], "hasMore": False}, "req_id": "r"}


def test_error_paths_use_wire_keys_not_attribute_names():
    image = {"type": "image", "data": "x", "mimeType": 5}
    err = assert_bad_request(CallToolResult, {"content": [image]}, "$.content[0].mimeType")
    assert "mime_type" not in err.message
    annotated = {"type": "text", "text": "t", "annotations": {"lastModified": 3}}
    assert_bad_request(CallToolResult, {"content": [annotated]}, "$.content[0].annotations.lastModified")
    assert_bad_request(CallToolResult, {"structuredContent": []}, "$.structuredContent")
    assert_bad_request(models.CompleteRet, {"completion": {"hasMore": "yes"}, "req_id": "r"}, "$.completion.hasMore")


def test_null_is_kept_where_peers_expect_the_key():
    tool = SMCPTool(name="t", description="d", params_schema={"type": "object"})
    assert to_wire(tool) == {
        "name": "t",
        "description": "d",
        "params_schema": {"type": "object"},
        "return_schema": None,
    }
    assert from_wire(SMCPTool, to_wire(tool)).return_schema is None
    assert to_wire(models.StdioServerParameters(command="python")) == {
        "command": "python",
        "args": [],
        "env": None,
        "cwd": None,
        "encoding": "utf-8",
        "encoding_error_handler": "strict",
    }


@pytest.mark.parametrize(
    "cls, extra",
    [
        (TextContent, {"text": "t"}),
        (ImageContent, {"data": "d", "mimeType": "image/png"}),
        (AudioContent, {"data": "d", "mimeType": "audio/wav"}),
        (ResourceLink, {"uri": "u", "name": "n"}),
        (EmbeddedResource, {"resource": {"uri": "u", "text": "t"}}),
        (TextResourceContents, {"uri": "u", "text": "t"}),
        (BlobResourceContents, {"uri": "u", "blob": "QQ=="}),
        (models.Resource, {"uri": "u", "name": "n"}),
    ],
)
def test_content_blocks_write_underscore_meta_and_read_either(cls, extra):
    tag = {"type": attrs.fields_dict(cls)["type"].default} if "type" in attrs.fields_dict(cls) else {}
    canonical = {**tag, **extra, "_meta": {"origin": "mcp"}}
    assert from_wire(cls, {**tag, **extra, "meta": {"origin": "mcp"}}).meta == {"origin": "mcp"}
    assert to_wire(from_wire(cls, {**tag, **extra, "meta": {"origin": "mcp"}})) == canonical
    assert to_wire(from_wire(cls, canonical)) == canonical
    assert from_wire(cls, {**canonical, "meta": {"origin": "alias"}}).meta == {"origin": "mcp"}  # wire key wins


def test_call_tool_result_writes_meta_and_reads_either():
    canonical = {"content": [{"type": "text", "text": "ok"}], "isError": False, "meta": {"a2c_timeout": False}}
    assert to_wire(from_wire(CallToolResult, canonical)) == canonical
    from_sdk = {"content": [{"type": "text", "text": "ok"}], "isError": False, "_meta": {"a2c_timeout": False}}
    assert from_wire(CallToolResult, from_sdk) == from_wire(CallToolResult, canonical)
    assert to_wire(CallToolResult()) == {"content": [], "isError": False}


def test_call_tool_result_failure_carries_the_smcp_markers():
    result = CallToolResult.failure(4004, "tool 'slow' timed out after 2s", timeout=True, a2c_timeout=True)
    wire = to_wire(result)
    assert wire == {
        "content": [{"type": "text", "text": "tool 'slow' timed out after 2s"}],
        "isError": True,
        "meta": {"error_code": 4004, "timeout": True, "a2c_timeout": True},
    }
    assert from_wire(CallToolResult, wire).error_code == 4004
    assert from_wire(CallToolResult, wire).text == "tool 'slow' timed out after 2s"
    assert CallToolResult(meta={"error_code": True}).error_code is None
    image = ImageContent(data="x", mime_type="image/png")
    mixed = CallToolResult(content=[TextContent(text="a"), image, TextContent(text="b")])
    assert mixed.text == "a\nb"


# -- tagged unions and resource contents -------------------------------------------


@pytest.mark.parametrize(
    "union, wire, expected",
    [
        (MCPServerConfig, {"type": "stdio", "name": "s", "server_parameters": {"command": "py"}}, StdioServerConfig),
        (MCPServerConfig, {"type": "sse", "name": "s", "server_parameters": {"url": "http://h/sse"}}, SseServerConfig),
        (MCPServerConfig, {"type": "streamable", "name": "s", "server_parameters": {"url": "http://h/mcp"}},
         StreamableHttpServerConfig),
        (MCPServerInput, {"type": "promptString", "id": "i", "description": "d"}, PromptStringInput),
        (MCPServerInput, {"type": "pickString", "id": "i", "description": "d", "options": ["a"]}, PickStringInput),
        (MCPServerInput, {"type": "command", "id": "i", "description": "d", "command": "c"}, CommandInput),
        (models.ContentBlock, {"type": "text", "text": "t"}, TextContent),
        (models.ContentBlock, {"type": "image", "data": "d", "mimeType": "image/png"}, ImageContent),
        (models.ContentBlock, {"type": "audio", "data": "d", "mimeType": "audio/wav"}, AudioContent),
        (models.ContentBlock, {"type": "resource_link", "uri": "u", "name": "n"}, ResourceLink),
        (models.ContentBlock, {"type": "resource", "resource": {"uri": "u", "blob": "QQ=="}}, EmbeddedResource),
        (models.CompletionReference, {"type": "ref/resource", "uri": "dpe://h/{doc_ref}"}, ResourceTemplateReference),
        (models.CompletionReference, {"type": "ref/prompt", "name": "p"}, PromptReference),
    ],
)  # fmt: skip
def test_a_tagged_union_picks_its_member_by_type(union, wire, expected):
    obj = from_wire(union, wire)
    assert type(obj) is expected
    assert from_wire(union, to_wire(obj)) == obj


@pytest.mark.parametrize(
    "union, tags",
    [
        (MCPServerConfig, "'stdio', 'sse', 'streamable'"),
        (MCPServerInput, "'promptString', 'pickString', 'command'"),
        (models.ContentBlock, "'text', 'image', 'audio', 'resource_link', 'resource'"),
        (models.CompletionReference, "'ref/resource', 'ref/prompt'"),
    ],
)
def test_an_unknown_or_missing_tag_is_a_400_listing_the_known_ones(union, tags):
    for wire, shown in (({"type": "websocket"}, "'websocket'"), ({}, "None"), ({"type": 3}, "3")):
        with pytest.raises(BadRequestError) as caught:
            from_wire(union, wire)
        assert caught.value.details["errors"] == [f"unknown type {shown}; expected one of {tags} @ $"]


def test_a_tag_error_inside_a_payload_names_the_element():
    good = {"type": "stdio", "name": "ok", "server_parameters": {"command": "c"}}
    wire = {"servers": {"ok": good, "bad": {"type": "ws"}}}
    err = assert_bad_request(GetComputerConfigRet, wire, "$.servers['bad']")
    assert "unknown type 'ws'" in err.message
    complete = {"agent": "a", "req_id": "r", "computer": "c", "ref": {"type": "ref/resource"}}
    assert_bad_request(CompleteReq, {**complete, "argument": {"name": "n", "value": "v"}}, "$.ref.uri")


def test_resource_contents_are_told_apart_by_text_or_blob():
    ret = from_wire(ReadResourceRet, {"req_id": "r", "contents": [
        {"uri": "dpe://h/d", "text": "# Doc", "mimeType": "text/markdown"},
        {"uri": "window://h/w", "blob": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"uri": "dpe://h/e", "text": "", "blob": "QQ=="},
    ]})  # fmt: skip
    assert [type(c) for c in ret.contents] == [TextResourceContents, BlobResourceContents, BlobResourceContents]
    assert ret.contents[0].mime_type == "text/markdown" and ret.contents[1].blob == "iVBORw0KGgo="
    neither = {"uri": "u", "mimeType": "text/plain"}
    err = assert_bad_request(ReadResourceRet, {"req_id": "r", "contents": [neither]}, "$.contents[0]")
    assert "'text' or 'blob'" in err.message
    assert_bad_request(ReadResourceRet, {"req_id": "r", "contents": [{"uri": "u", "text": 1}]}, "$.contents[0].text")
    assert_bad_request(EmbeddedResource, {"type": "resource", "resource": "text"}, "$.resource")


# -- ISO 8601 durations ------------------------------------------------------------


@pytest.mark.parametrize(
    "value, seconds",
    [("PT30S", 30.0), ("PT5M", 300.0), ("PT10M30S", 630.0), ("PT0.5S", 0.5), ("P1DT3S", 86403.0), (45, 45.0),
     (2.5, 2.5)],
)
def test_streamable_durations_read_iso_or_seconds(value, seconds):
    wire = {"url": "http://h/mcp", "timeout": value, "sse_read_timeout": value}
    params = from_wire(StreamableHttpServerParameters, wire)
    assert params.timeout == params.sse_read_timeout == seconds


def test_streamable_durations_are_written_as_iso_8601():
    params = StreamableHttpServerParameters(
        url="http://h/mcp", timeout=IsoDuration(45.0), sse_read_timeout=IsoDuration(0.5)
    )
    assert to_wire(params) == {
        "url": "http://h/mcp",
        "headers": None,
        "timeout": "PT45S",
        "sse_read_timeout": "PT0.5S",
        "terminate_on_close": True,
    }
    defaults = to_wire(StreamableHttpServerParameters(url="http://h/mcp"))
    assert (defaults["timeout"], defaults["sse_read_timeout"]) == ("PT30S", "PT5M")
    sse = to_wire(from_wire(models.SseServerParameters, {"url": "http://h/sse", "timeout": 7}))
    assert (sse["timeout"], sse["sse_read_timeout"]) == (7.0, 300.0)  # SSE keeps plain seconds


@pytest.mark.parametrize("value", ["soon", "30", "PT", True, None, [30], {"seconds": 30}, float("nan")])
def test_a_bad_duration_is_a_400(value):
    err = assert_bad_request(StreamableHttpServerParameters, {"url": "u", "timeout": value}, "$.timeout")
    assert "ISO 8601" in err.message


# -- a2c_tool_meta -----------------------------------------------------------------


def test_tool_meta_to_json_is_the_spec_string():
    assert ToolMeta(auto_apply=True, tags=["browser"]).to_json() == (
        '{"auto_apply": true, "alias": null, "tags": ["browser"], "ret_object_mapper": null}'
    )
    assert json.loads(ToolMeta(alias="浏览器").to_json())["alias"] == "浏览器"
    assert "浏览器" in ToolMeta(alias="浏览器").to_json()


@PROPERTY
@given(meta=model_strategy(ToolMeta))
def test_a2c_tool_meta_string_round_trips_through_smcp_tool(meta):
    tool = SMCPTool(name="t", description="d", params_schema={}, meta={A2C_TOOL_META: meta.to_json()})
    assert from_wire(SMCPTool, json.loads(json.dumps(to_wire(tool)))).tool_meta == meta


@pytest.mark.parametrize(
    "meta",
    [None, {}, {"other": "x"}, {A2C_TOOL_META: {"auto_apply": True}}, {A2C_TOOL_META: "not json"},
     {A2C_TOOL_META: "[1, 2]"}, {A2C_TOOL_META: '{"auto_apply": "yes"}'}, {A2C_TOOL_META: '{"tags": "browser"}'}],
)  # fmt: skip
def test_a_missing_or_malformed_a2c_tool_meta_reads_as_none(meta):
    assert SMCPTool(name="t", description="d", params_schema={}, meta=meta).tool_meta is None


def test_tool_meta_merges_over_the_default():
    default = ToolMeta(auto_apply=False, tags=["files"], alias="base")
    merged = ToolMeta(auto_apply=True, alias=None).merged_over(default)
    assert merged == ToolMeta(auto_apply=True, tags=["files"], alias="base")
    assert ToolMeta(alias="x").merged_over(None) == ToolMeta(alias="x")


# -- deep nesting and huge values --------------------------------------------------


def test_deeply_nested_json_fields_pass_through_both_ways():
    """A JSON-typed field takes any depth the Socket.IO JSON decoder accepts (~900)."""
    params = deeply_nested(900, dict)
    wire = to_wire(from_wire(ToolCallReq, {**CALL, "params": params}))
    assert wire["params"] == params
    structured = {"content": [], "isError": False, "structuredContent": deeply_nested(900, dict)}
    assert to_wire(from_wire(CallToolResult, structured)) == structured


def test_deep_nesting_where_a_string_is_expected_is_a_400():
    deep = deeply_nested(900, list)
    err = assert_bad_request(ToolCallReq, {**CALL, "tool_name": deep}, "$.tool_name")
    assert "expected str, got list" in err.message
    assert_bad_request(models.StdioServerParameters, {"command": "c", "args": ["ok", deep]}, "$.args[1]")


def test_huge_strings_are_accepted_as_values_and_never_echoed_in_errors():
    huge = HUGE_STRING * 5
    assert from_wire(CallToolResult, {"content": [{"type": "text", "text": huge}]}).text == huge
    for cls, wire, path in [
        (ToolCallReq, {**CALL, "timeout": huge}, "$.timeout"),
        (StreamableHttpServerParameters, {"url": "u", "timeout": huge}, "$.timeout"),
        (CallToolResult, {"content": [{"type": huge}]}, "$.content[0]"),
        (models.EnterOfficeReq, {"role": huge, "name": "n", "office_id": "o"}, "$.role"),
    ]:
        err = assert_bad_request(cls, wire, path)
        assert len(err.message) < 500


# -- the spec's JSON examples ------------------------------------------------------

SPEC_TOOL_SCENE_1 = """{
  "name": "hello",
  "description": "Say hello to someone.",
  "params_schema": {
    "properties": {"name": {"default": "World", "title": "Name", "type": "string"}},
    "title": "helloArguments",
    "type": "object"
  },
  "return_schema": {
    "properties": {"result": {"title": "Result", "type": "string"}},
    "required": ["result"],
    "title": "helloOutput",
    "type": "object"
  },
  "meta": {}
}"""

SPEC_TOOL_SCENE_2 = r"""{
  "name": "browser_navigate",
  "description": "Navigate to a URL.",
  "params_schema": { "..." : "..." },
  "return_schema": { "..." : "..." },
  "meta": {
    "a2c_tool_meta": "{\"auto_apply\": true, \"alias\": null, \"tags\": [\"browser\"], \"ret_object_mapper\": null}"
  }
}"""


def test_spec_smcp_tool_scene_1_without_tool_meta():
    wire = json.loads(SPEC_TOOL_SCENE_1)
    tool = from_wire(SMCPTool, wire)
    assert tool.return_schema["required"] == ["result"] and tool.meta == {} and tool.tool_meta is None
    assert to_wire(tool) == wire


def test_spec_smcp_tool_scene_2_with_default_tool_meta():
    wire = json.loads(SPEC_TOOL_SCENE_2)
    tool = from_wire(SMCPTool, wire)
    assert tool.tool_meta == ToolMeta(auto_apply=True, tags=["browser"])
    assert tool.meta[A2C_TOOL_META] == ToolMeta(auto_apply=True, tags=["browser"]).to_json()
    assert to_wire(tool) == wire


SPEC_FINDER_LEVEL_0 = """{
  "documents": [
    {"doc_ref": "rpt-2026", "uri": "dpe://com.example.docs/rpt-2026",
     "file_uri": "file:///data/reports/2026-annual.xlsx", "file_type": "xlsx", "title": "2026 年度报告",
     "page_count": 12, "keywords": ["财务", "年报"], "summary": "2026 年度财务与运营报告",
     "last_modified": "2026-01-15T08:30:00Z"},
    {"doc_ref": "contract-a1", "uri": "dpe://com.example.docs/contract-a1",
     "file_uri": "file:///data/contracts/a1.pdf", "file_type": "pdf", "title": "A1 合同",
     "page_count": 5, "keywords": ["合同"], "summary": "A1 项目服务合同", "last_modified": "2026-02-01T14:00:00Z"}
  ],
  "total_count": 2
}"""

SPEC_FINDER_LEVEL_1_PAGES = """{
  "doc_ref": "rpt-2026", "uri": "dpe://com.example.docs/rpt-2026",
  "file_uri": "file:///data/reports/2026-annual.xlsx", "file_type": "xlsx", "title": "2026 年度报告",
  "page_count": 12, "keywords": ["财务", "年报"], "summary": "2026 年度财务与运营报告",
  "last_modified": "2026-01-15T08:30:00Z",
  "pages": [
    {"page_index": 0, "title": "概览", "element_count": 8,
     "uri": "dpe://com.example.docs/rpt-2026/pages/0", "doc_ref": "rpt-2026"},
    {"page_index": 1, "title": "收入分析", "element_count": 15,
     "uri": "dpe://com.example.docs/rpt-2026/pages/1", "doc_ref": "rpt-2026"}
  ],
  "page_offset": 0, "page_limit": 20, "page_total": 12
}"""

SPEC_FINDER_LEVEL_2 = """{
  "page_index": 0, "title": "概览", "doc_ref": "rpt-2026", "uri": "dpe://com.example.docs/rpt-2026/pages/0",
  "elements": [
    {"element_id": "h-001", "category": "heading", "summary": "2026 年度总结",
     "content": {"level": 1, "text": "2026 年度总结"}},
    {"element_id": "txt-001", "category": "text", "summary": "报告引言段落",
     "content": {"text": "本报告总结了 2026 年度公司在各业务领域的运营情况..."}},
    {"element_id": "tbl-001", "category": "table", "summary": "季度收入对比表（4行3列）",
     "content": {"headers": ["季度", "收入（万元）", "同比增长"],
                 "rows": [["Q1", "1,250", "+12%"], ["Q2", "1,380", "+15%"],
                          ["Q3", "1,420", "+8%"], ["Q4", "1,560", "+18%"]]}},
    {"element_id": "chart-001", "category": "chart", "summary": "季度收入趋势图",
     "content": {"chart_type": "line", "title": "季度收入趋势", "data_summary": "Q1-Q4 收入呈上升趋势，Q4 达到最高点 1,560 万元"}}
  ],
  "element_count": 4
}"""

SPEC_FINDER_LEVEL_3 = """{
  "element_id": "tbl-001", "category": "table", "doc_ref": "rpt-2026", "page_index": 0,
  "uri": "dpe://com.example.docs/rpt-2026/elements/tbl-001", "summary": "季度收入对比表（4行3列）",
  "content": {
    "headers": ["季度", "收入（万元）", "同比增长"],
    "rows": [["Q1", "1,250", "+12%"], ["Q2", "1,380", "+15%"], ["Q3", "1,420", "+8%"], ["Q4", "1,560", "+18%"]],
    "total_rows": 4, "total_columns": 3
  },
  "metadata": {"source_range": "A1:C5", "has_formulas": true}
}"""


def test_spec_finder_level_0_catalogue():
    wire = json.loads(SPEC_FINDER_LEVEL_0)
    catalogue = from_wire(DPECatalogue, wire)
    assert [d.doc_ref for d in catalogue.documents] == ["rpt-2026", "contract-a1"] and catalogue.total_count == 2
    assert to_wire(catalogue) == wire
    summary = to_wire(catalogue.documents[1].to_summary("docs"))
    assert summary == {**wire["documents"][1], "server": "docs"}


def test_spec_finder_level_1_metadata_and_pages():
    with_pages = json.loads(SPEC_FINDER_LEVEL_1_PAGES)
    metadata = {k: v for k, v in with_pages.items() if k not in ("pages", "page_offset", "page_limit", "page_total")}
    document = from_wire(DPEDocument, metadata)
    assert document.pages is None and to_wire(document) == metadata
    paged = from_wire(DPEDocument, with_pages)
    assert [p.title for p in paged.pages] == ["概览", "收入分析"] and paged.page_total == 12
    assert to_wire(paged) == with_pages


def test_spec_finder_level_2_page():
    wire = json.loads(SPEC_FINDER_LEVEL_2)
    page = from_wire(DPEPage, wire)
    assert [e.category for e in page.elements] == ["heading", "text", "table", "chart"]
    assert all(e.category in models.ELEMENT_CATEGORIES for e in page.elements)
    assert page.elements[2].content["rows"][3] == ["Q4", "1,560", "+18%"]
    assert to_wire(page) == wire


def test_spec_finder_level_3_element():
    wire = json.loads(SPEC_FINDER_LEVEL_3)
    element = from_wire(DPEElementDetail, wire)
    assert element.metadata == {"source_range": "A1:C5", "has_formulas": True} and element.page_index == 0
    assert to_wire(element) == wire


# -- the official Python SDK's configuration format --------------------------------
# Dumped with `model_dump(mode="json")` from a2c-smcp 0.1.6 models over mcp 1.30
# parameter classes (pydantic writes timedelta as ISO 8601, and every null).

SDK_STDIO = {
    "name": "files", "disabled": False, "forbidden_tools": ["write_file"],
    "tool_meta": {"read_file": {"auto_apply": True, "alias": None, "tags": ["fs"], "ret_object_mapper": None}},
    "default_tool_meta": {"auto_apply": None, "alias": None, "tags": ["files"], "ret_object_mapper": None},
    "vrl": None, "type": "stdio",
    "server_parameters": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${input:root}"],
        "env": {"TOKEN": "${input:token}"}, "cwd": None, "encoding": "utf-8", "encoding_error_handler": "strict",
    },
}  # fmt: skip
SDK_SSE = {
    "name": "legacy", "disabled": False, "forbidden_tools": [], "tool_meta": {}, "default_tool_meta": None,
    "vrl": None, "type": "sse",
    "server_parameters": {"url": "http://127.0.0.1:8000/sse", "headers": {"Authorization": "Bearer ${input:token}"},
                          "timeout": 5.0, "sse_read_timeout": 300.0},
}  # fmt: skip
SDK_STREAMABLE = {
    "name": "browser", "disabled": True, "forbidden_tools": [], "tool_meta": {}, "default_tool_meta": None,
    "vrl": None, "type": "streamable",
    "server_parameters": {"url": "http://127.0.0.1:8931/mcp", "headers": None, "timeout": "PT45S",
                          "sse_read_timeout": "PT10M30S", "terminate_on_close": True},
}  # fmt: skip
SDK_INPUTS = [
    {"id": "token", "description": "API token", "type": "promptString", "default": None, "password": True},
    {"id": "root", "description": "Root", "type": "pickString", "options": ["/a", "/b"], "default": "/a"},
    {"id": "cmd", "description": "d", "type": "command", "command": "shell.echo", "args": {"x": "y"}},
]
# Fields a peer expects even when null (written as null, not omitted).
KEEP_NONE_KEYS = {"env", "cwd", "headers", "return_schema"}


def without_nulls(value: Any) -> Any:
    """`value` as we write it: null-valued optional keys dropped, except the kept ones."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None or k in KEEP_NONE_KEYS}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("wire", [SDK_STDIO, SDK_SSE, SDK_STREAMABLE], ids=["stdio", "sse", "streamable"])
def test_an_official_sdk_server_config_loads_unchanged(wire):
    config = from_wire(MCPServerConfig, json.loads(json.dumps(wire)))
    assert config.type == wire["type"] and config.name == wire["name"]
    assert to_wire(config) == without_nulls(wire)


def test_official_sdk_config_values_are_read_faithfully():
    stdio, sse, streamable = from_wire(list[MCPServerConfig], [SDK_STDIO, SDK_SSE, SDK_STREAMABLE])
    assert stdio.server_parameters.env == {"TOKEN": "${input:token}"} and stdio.server_parameters.cwd is None
    assert stdio.forbidden_tools == ["write_file"]
    assert stdio.tool_meta["read_file"] == ToolMeta(auto_apply=True, tags=["fs"])
    assert stdio.default_tool_meta == ToolMeta(tags=["files"])
    assert (sse.server_parameters.timeout, sse.server_parameters.sse_read_timeout) == (5.0, 300.0)
    assert streamable.disabled and streamable.server_parameters.timeout == 45.0
    assert streamable.server_parameters.sse_read_timeout == 630.0


def test_official_sdk_inputs_load_as_a_list_and_one_by_one():
    inputs = from_wire(list[MCPServerInput], SDK_INPUTS)
    assert [type(i) for i in inputs] == [PromptStringInput, PickStringInput, CommandInput]
    assert inputs[0].password is True and inputs[1].options == ["/a", "/b"] and inputs[2].args == {"x": "y"}
    assert [to_wire(i) for i in inputs] == without_nulls(SDK_INPUTS)
    assert from_wire(MCPServerInput, SDK_INPUTS[1]) == inputs[1]


def test_official_sdk_get_config_answer_loads_unchanged():
    answer = {"servers": {c["name"]: c for c in (SDK_STDIO, SDK_SSE, SDK_STREAMABLE)}, "inputs": SDK_INPUTS}
    ret = from_wire(GetComputerConfigRet, answer)
    assert sorted(ret.servers) == ["browser", "files", "legacy"] and len(ret.inputs) == 3
    assert to_wire(ret) == without_nulls(answer)


def test_a_hand_written_config_takes_the_sdk_defaults():
    minimal = [
        {"type": "stdio", "name": "py", "server_parameters": {"command": "python", "args": ["-m", "srv"]}},
        {"type": "sse", "name": "s", "server_parameters": {"url": "http://h/sse"}},
        {"type": "streamable", "name": "h", "server_parameters": {"url": "http://h/mcp"}},
    ]
    stdio, sse, streamable = from_wire(list[MCPServerConfig], minimal)
    assert (stdio.disabled, stdio.forbidden_tools, stdio.tool_meta, stdio.default_tool_meta) == (False, [], {}, None)
    assert (stdio.server_parameters.encoding, stdio.server_parameters.encoding_error_handler) == ("utf-8", "strict")
    assert (sse.server_parameters.timeout, sse.server_parameters.sse_read_timeout) == (5.0, 300.0)
    assert (streamable.server_parameters.timeout, streamable.server_parameters.terminate_on_close) == (30.0, True)
