"""Hypothesis strategies for malformed event payloads, and the check every answer to one
must pass.

A malformed payload starts from a valid one (so most of it is plausible and it gets
past the first check) and is broken in one to three ways: a field dropped, a field given
a value of any JSON type, a huge string, a deeply nested value or an invalid URI, extra
fields added; or the whole payload replaced by something that is not an object, or sent
as zero or two arguments. Some results are valid after all (an extra field, a string for
a string): those must get a normal answer.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from smcp_sync.protocol.errors import ErrorCode, SMCPError

#: Hypothesis settings of the suite: deterministic (CI), no deadline (real network), and
#: no shrinking: it would replay a failure for minutes over the network, and the failing
#: example is readable as found.
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Longest acceptable error answer (JSON characters): an error quotes bad values short,
#: it never echoes a huge one back.
MAX_ERROR_SIZE = 4096

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
HUGE_STRINGS = st.builds(lambda n, c: c * n, st.integers(100_000, 300_000), st.sampled_from(["x", "é", "\u4e2d", "{"]))
INVALID_URIS = st.sampled_from(
    [
        "",
        "dpe://",
        "dpe:///doc",
        "dpe://srv",
        "dpe://srv/doc/pages/x",
        "dpe://srv/doc/pages/-1",
        "dpe://srv/doc/pages/0/elements/",
        "dpe://srv/%zz",
        "dpe://s rv/doc",
        "dpe://srv/doc?page=1#frag",
        "window://",
        "window://app/main?priority=abc",
        "window://app/main?priority=1000",
        "window://app/main?fullscreen=maybe",
        "http://[::1",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "::::",
        "\x00",
        "dpe://" + "a" * 5000,
    ]
) | st.text(max_size=40)


def _nested(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"n": value}
    return value


#: Deep, but within what a Python peer can encode (json refuses ~1,000 levels).
DEEP_VALUES = st.builds(_nested, st.integers(20, 400), SCALARS, st.booleans())
FIELD_VALUES = st.one_of(JSON_VALUES, HUGE_STRINGS, DEEP_VALUES, INVALID_URIS)


def _paths(payload: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every field path of `payload`, nested objects included."""
    found = []
    for key, value in payload.items():
        found.append((*prefix, key))
        if isinstance(value, dict):
            found += _paths(value, (*prefix, key))
    return found


def _edit(payload: dict[str, Any], path: tuple[str, ...], value: Any = None, drop: bool = False) -> dict[str, Any]:
    """A copy of `payload` with the field at `path` set to `value` (or dropped)."""
    copy = dict(payload)
    head, *rest = path
    if rest:
        inner = copy.get(head)
        copy[head] = _edit(inner if isinstance(inner, dict) else {}, tuple(rest), value, drop)
    elif drop:
        copy.pop(head, None)
    else:
        copy[head] = value
    return copy


@st.composite
def _broken_fields(draw: st.DrawFn, valid: dict[str, Any]) -> tuple[Any, ...]:
    payload = valid
    paths = _paths(valid)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["drop", "set", "extra"]))
        if how == "drop":
            payload = _edit(payload, draw(st.sampled_from(paths)), drop=True)
        elif how == "set":
            payload = _edit(payload, draw(st.sampled_from(paths)), draw(FIELD_VALUES))
        else:
            payload = _edit(payload, (draw(st.text(min_size=1, max_size=12)),), draw(FIELD_VALUES))
    return (payload,)


def malformed_arguments(valid: dict[str, Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    """The arguments of one event carrying a broken version of `valid`."""
    return st.one_of(
        _broken_fields(valid),
        _broken_fields(valid),  # twice as likely: the interesting part
        st.tuples(JSON_VALUES.filter(lambda v: not isinstance(v, dict))),
        st.just(()),
        st.tuples(st.just(valid), JSON_VALUES),
    )


def coded_error(answer: Any, max_size: int | None = MAX_ERROR_SIZE) -> SMCPError | None:
    """The error in `answer`, checked: a known code that is not an internal error, a
    message that says something, no stack trace, at most `max_size` characters in all.
    None if not an error."""
    error = SMCPError.from_wire(answer)
    if error is None:
        return None
    assert error.code in ErrorCode.__members__.values(), f"unknown code in {answer!r:.300}"
    assert error.code != ErrorCode.INTERNAL_ERROR, f"an internal error answered bad input: {answer!r:.300}"
    assert isinstance(error.message, str) and error.message.strip(), f"no message in {answer!r:.300}"
    assert "Traceback" not in error.message and 'File "' not in error.message
    if max_size is not None:
        assert len(json.dumps(answer, ensure_ascii=False)) <= max_size, f"error answer too long: {answer!r:.300}"
    return error
