"""The operator's switches, as one value object `SMCPServer(observability=...)` takes.

Every part is optional and off the hot path when off: the probes cost a path check per
HTTP request, metrics need the `metrics` extra (without it `GET /metrics` says so), the
audit trail writes only while its logger is enabled, the Admin UI is off unless given.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class AdminUI:
    """python-socketio's Socket.IO Admin UI (`Server.instrument()`) on the `/admin`
    namespace, for this user and password. `read_only`: the UI cannot disconnect clients
    or change rooms. Always python-socketio's "production" mode: its "development" mode
    shows every event's payload and each client's handshake headers (API keys among
    them) to the UI, and starts a ping thread per connection."""

    username: str = attrs.field(validator=attrs.validators.min_len(1))
    password: str = attrs.field(validator=attrs.validators.min_len(1), repr=False)
    read_only: bool = True


@attrs.frozen
class AuditOptions:
    """The audit trail (logger ``smcp_sync.audit``, records at INFO): one record per tool
    call, cancel, join, leave and refusal. `arguments` / `results` add a tool call's
    arguments and result: off by default, as they may hold what the caller considers
    secret."""

    arguments: bool = False
    results: bool = False


@attrs.frozen
class Observability:
    """`health`: ``GET /health/live`` and ``/health/ready``; `metrics`: ``GET /metrics``
    (needs the `metrics` extra, else it answers 501); `audit`: the audit trail, None for
    none; `admin`: the Admin UI, None (the default) for none; `tracing`: a routing span
    for each request that carries a trace context (`smcp_sync.tracing`; nothing until
    the application sets an OpenTelemetry tracer provider)."""

    health: bool = True
    metrics: bool = True
    audit: AuditOptions | None = AuditOptions()
    admin: AdminUI | None = None
    tracing: bool = True
