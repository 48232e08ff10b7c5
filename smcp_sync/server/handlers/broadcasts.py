"""`server:*` events that only fan a notification out to the sender's office:
a Computer's `server:update_*` and an Agent's `server:tool_call_cancel`."""

from __future__ import annotations

import logging
from typing import Any, Callable

from ...protocol import events
from ...protocol.codec import to_wire
from ...protocol.errors import ForbiddenError
from ...protocol.models import AgentCallData, UpdateComputerConfigReq
from ..offices.answers import parse_payload
from .offices import Offices

logger = logging.getLogger(__name__)


class Broadcasts:
    def __init__(self, offices: Offices) -> None:
        self._offices = offices

    def update_handler(self, event: str) -> Callable[..., None]:
        notification = events.UPDATE_TO_NOTIFICATION[event]

        def update(sid: str, *args: Any) -> None:
            req = parse_payload(UpdateComputerConfigReq, args)
            sender = self._offices.member(sid)
            if sender.role != "computer":
                raise ForbiddenError(f"only a computer may send {event}", details={"role": sender.role})
            if req.computer != sender.name:
                # The session is the authority (docs/ARCHITECTURE.md, Wire decisions); the field is only informative.
                logger.info("%s from %r named computer %r; using the session's name", event, sender.name, req.computer)
            assert sender.name is not None and sender.office_id is not None  # a member: it is in an office
            payload = to_wire(UpdateComputerConfigReq(computer=sender.name))
            self._offices.notify(sender.office_id, notification, payload, skip_sid=sid)

        update.__name__ = f"on_{event.replace(':', '_')}"
        return update

    def cancel_tool_call(self, sid: str, *args: Any) -> None:
        req = parse_payload(AgentCallData, args)
        sender = self._offices.agent(sid, req.agent)
        assert sender.office_id is not None  # a member: it is in an office
        self._offices.notify(sender.office_id, events.CANCEL_TOOL_CALL_NOTIFICATION, to_wire(req), skip_sid=sid)
