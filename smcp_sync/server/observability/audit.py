"""The audit trail: logger ``smcp_sync.audit``, one record at INFO per tool call, cancel,
join, leave and refusal, its fields in the record's `audit` attribute (a dict) and a
one-line summary as its message. It goes wherever the user's logging sends it;
`JsonLinesFormatter` writes one JSON object per line. Nothing is built while the logger
is off for INFO.

Never in a record: credentials (the Server keeps what an auth provider returns in the
session, never here) and, unless switched on (`AuditOptions`), a tool call's arguments
and result.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import socket
from typing import Any

from ...protocol import events
from ...protocol.errors import cut_short
from ..handlers.membership import MembershipWatcher
from ..offices.office_rules import MAX_IDENTIFIER_LENGTH, Session
from ..offices.registry import OfficeRegistry
from .options import AuditOptions
from .outcome import OK

AUDIT_LOGGER = "smcp_sync.audit"
audit_logger = logging.getLogger(AUDIT_LOGGER)

#: A W3C `traceparent`: version, trace id, parent span id, flags.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
#: Fields a record takes from a request's payload, each cut short (refused ones may be huge).
_PAYLOAD_FIELDS = {"office_id": "office", "agent": "agent", "computer": "computer", "tool_name": "tool", "req_id": "req_id"}
#: Fields a record's message shows, when it has them.
_SUMMARY = ("office", "role", "name", "agent", "computer", "tool", "event", "code", "reason")


class AuditTrail(MembershipWatcher):
    def __init__(self, options: AuditOptions, registry: OfficeRegistry) -> None:
        self._options = options
        self._registry = registry

    @property
    def on(self) -> bool:
        return audit_logger.isEnabledFor(logging.INFO)

    def answered(self, event: str, sid: str, args: tuple[Any, ...], code: str, seconds: float, answer: Any) -> None:
        """A request answered: a tool call's record, a cancel's, or a refusal's."""
        if not self.on or (code == OK and event not in (events.TOOL_CALL, events.CANCEL_TOOL_CALL)):
            return
        payload = args[0] if len(args) == 1 and isinstance(args[0], dict) else {}
        fields: dict[str, Any] = {**self._caller(sid), **_from_payload(payload), "event": event, "code": code}
        fields["duration_ms"] = round(seconds * 1000, 3)
        trace_id = trace_id_of(payload)
        if trace_id is not None:
            fields["trace_id"] = trace_id
        if event == events.TOOL_CALL:
            if self._options.arguments:
                fields["arguments"] = payload.get("params")
            if self._options.results:
                fields["result"] = answer
            self._write("tool_call", fields)
        else:
            self._write("cancel" if code == OK else "refusal", fields)

    def joined(self, member: Session) -> None:
        if self.on:
            self._write("join", _member(member))

    def left(self, member: Session, reason: str) -> None:
        if self.on:
            self._write("leave", {**_member(member), "reason": reason})

    def auth_failed(self, address: str) -> None:
        if self.on:
            self._write("refusal", {"event": "connect", "code": "401", "address": address})

    def _caller(self, sid: str) -> dict[str, Any]:
        session = self._registry.session(sid)
        caller: dict[str, Any] = {"sid": sid}
        if session is not None and session.joined:
            caller.update(office=session.office_id, role=session.role, name=session.name)
        return caller

    def _write(self, kind: str, fields: dict[str, Any]) -> None:
        record = {"kind": kind, "node": node_name(), **fields}
        # made as `Logger.info` makes it, without looking up the caller's source line
        # (a third of a record's cost; a record's place in our code says nothing)
        summary = (_Summary(record),)
        made = audit_logger.makeRecord(AUDIT_LOGGER, logging.INFO, __file__, 0, "%s", summary, None, extra={"audit": record})
        audit_logger.handle(made)


_HOST = socket.gethostname()


def node_name() -> str:
    """This Server process: host and process id (a gunicorn worker has its own)."""
    return f"{_HOST}:{os.getpid()}"


def trace_id_of(payload: dict[str, Any]) -> str | None:
    """The W3C trace id a request carries in `_meta.traceparent` (its own, or its tool
    arguments' as MCP puts it), if any."""
    params = payload.get("params")
    for holder in (payload, params if isinstance(params, dict) else {}):
        meta = holder.get("_meta")
        parent = meta.get("traceparent") if isinstance(meta, dict) else None
        match = _TRACEPARENT.fullmatch(parent) if isinstance(parent, str) else None
        if match is not None:
            return match.group(1)
    return None


def _from_payload(payload: dict[str, Any]) -> dict[str, str]:
    return {
        field: cut_short(value, MAX_IDENTIFIER_LENGTH)
        for key, field in _PAYLOAD_FIELDS.items()
        if isinstance(value := payload.get(key), str)
    }


class _Summary:
    """A record's message, made only if a formatter asks for it (`JsonLinesFormatter`
    does not: the fields say it all)."""

    __slots__ = ("_record",)

    def __init__(self, record: dict[str, Any]) -> None:
        self._record = record

    def __str__(self) -> str:
        return " ".join([self._record["kind"], *(f"{key}={self._record[key]}" for key in _SUMMARY if key in self._record)])


def _member(member: Session) -> dict[str, Any]:
    return {"office": member.office_id, "role": member.role, "name": member.name, "sid": member.sid}


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: time (ISO 8601, UTC), level, logger, and an audit
    record's fields, or any other record's message
    (`logging.Handler.setFormatter(JsonLinesFormatter())`)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc).isoformat(),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "audit", None)
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)
