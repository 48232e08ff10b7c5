"""Wire conventions of this project that are not structures (docs/ARCHITECTURE.md, Wire decisions).

Kept here so Server, Computer and Agent agree on them without importing each other.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ErrorCode, SMCPError

#: Extra seconds the Server waits beyond `ToolCallReq.timeout` for the Computer's answer.
SERVER_TIMEOUT_BUFFER = 2.0
#: Extra seconds the Agent waits beyond `ToolCallReq.timeout` (more than the Server, so
#: a Server-side timeout answer arrives before the Agent gives up).
AGENT_TIMEOUT_BUFFER = 4.0
#: Default forward timeout for every routed request other than `client:tool_call`.
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Default `timeout` of a tool call, in seconds, for the Agent that asks and the Computer
#: that runs it alike: what the official a2c-smcp 0.4.2 Agent waits for a call.
DEFAULT_TOOL_TIMEOUT = 60.0

_CODE_PREFIX = re.compile(r"^\[(\d{3,4})\] ?")


def join_refusal(error: SMCPError) -> tuple[bool, str]:
    """The two-value ack of a refused join/leave. The message starts with ``[code]`` so our
    clients recover the code; other SDKs just show the text."""
    return False, str(error)


def error_from_ack(message: Any) -> SMCPError:
    """The typed error for a refused join/leave ack message (403 when no code prefix)."""
    text = message if isinstance(message, str) and message else "request refused"
    match = _CODE_PREFIX.match(text)
    if match:
        return SMCPError.for_code(int(match.group(1)), text[match.end():])
    return SMCPError.for_code(ErrorCode.FORBIDDEN, text)
