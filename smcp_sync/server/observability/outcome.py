"""A request's outcome as a bounded label: "ok", or the SMCP error code it ended in.

Only the codes `ErrorCode` names are kept ("other" for the rest): a Computer answers
with any number it likes, and a metric label must not take unbounded values.
"""

from __future__ import annotations

from typing import Any

from ...protocol.conventions import error_from_ack
from ...protocol.errors import ErrorCode, SMCPError
from ..offices.answers import JOIN_ACK_EVENTS

OK = "ok"
#: A tool's own failure (`isError`) without an SMCP code.
TOOL_ERROR = "tool_error"
OTHER = "other"
_KNOWN = frozenset(int(code) for code in ErrorCode)


def outcome_of(event: str, answer: Any) -> str:
    """The outcome of `event` answered with `answer` (as the handler returns it)."""
    if event in JOIN_ACK_EVENTS:
        accepted, message = answer if isinstance(answer, tuple) and len(answer) == 2 else (False, None)
        return OK if accepted is True else _label(error_from_ack(message).code)
    if not isinstance(answer, dict):
        return OK
    error = SMCPError.from_wire(answer) if "code" in answer or "error" in answer else None
    if error is not None:
        return _label(error.code)
    if answer.get("isError") is True:
        meta = answer.get("meta") or answer.get("_meta")
        code = meta.get("error_code") if isinstance(meta, dict) else None
        return _label(code) if isinstance(code, int) and not isinstance(code, bool) else TOOL_ERROR
    return OK


def _label(code: int) -> str:
    return str(code) if code in _KNOWN else OTHER
