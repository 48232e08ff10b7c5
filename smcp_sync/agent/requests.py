"""The one path every Agent request takes: model -> wire -> Server -> wire -> model.

Every request carries a fresh `req_id`; an answer model that has a `req_id` must carry
the same one. An answer that does not fit its model is the peer's fault, so it is a 500
(`InternalError`), not the 400 the codec raises for bad input. An empty answer is what
python-socketio peers send for events they have no handler for (the official SDK's
Server for `client:get_config`, its Computer for the extension events, a 0.1.x Computer
for the skill events): 404, as `NotHandledError`.

An smcp_sync extension event (`protocol.extensions`) is not sent to a Server that did not
advertise it (an official SDK's, which would leave it unanswered): it fails at once with
`ExtensionNotSupportedError`, as does our Server's refusal to route one to a Computer that
did not announce it.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from .transport import AgentTransport
from ..protocol.codec import from_wire, to_wire
from ..protocol.conventions import AGENT_TIMEOUT_BUFFER, DEFAULT_REQUEST_TIMEOUT
from ..protocol.errors import BadRequestError, InternalError, NotFoundError
from ..protocol.extensions import EXTENSION_REQUESTS, ExtensionNotSupportedError
from ..protocol.redaction import redact_url
from ..tracing import client_span

T = TypeVar("T")

#: How long the Agent waits for requests other than tool calls: the Server's forward
#: timeout plus the Agent's buffer, so the Server's own timeout answer arrives first.
DEFAULT_AGENT_REQUEST_TIMEOUT = DEFAULT_REQUEST_TIMEOUT + AGENT_TIMEOUT_BUFFER


class NotHandledError(NotFoundError):
    """The peer answered with nothing: it has no handler for the event (it is still there)."""


def new_req_id() -> str:
    return uuid.uuid4().hex


def ask(connection: AgentTransport, event: str, request: Any, answer_type: type[T], timeout: float) -> T:
    """Send `request` as `event` and return the answer as `answer_type`."""
    if event in EXTENSION_REQUESTS and connection.connected and event not in connection.peer_extensions:
        raise ExtensionNotSupportedError.refusal(event, "server", f"the Server at {redact_url(connection.url or '')}")
    try:
        with client_span(event, to_wire(request)) as payload:
            answer = connection.call(event, payload, timeout)
    except NotFoundError as exc:
        if ExtensionNotSupportedError.is_one(exc):
            raise ExtensionNotSupportedError(exc.message, details=exc.details) from None
        raise
    if answer is None:
        raise NotHandledError(f"empty answer to {event}: the Server or Computer does not handle it", details={"event": event})
    try:
        result = from_wire(answer_type, answer)
    except BadRequestError as exc:
        raise InternalError(f"bad answer to {event}: {exc.message}", details=exc.details) from None
    answered = getattr(result, "req_id", request.req_id)
    if answered != request.req_id:
        raise InternalError(
            f"answer to {event} carries req_id {answered!r}, expected {request.req_id!r}",
            details={"event": event, "req_id": request.req_id},
        )
    return result
