"""What one client may hold of the Server: time before it authenticates, the size of what
it sends before then, failed authentications, time to send a request, connections per
address, bytes waiting to be sent to it.

Why: without these, sockets that never authenticate, requests sent half-way and clients
that stop reading hold worker threads and memory for as long as they like, and a few
hundred of them lock everyone else out (issue 12). Every bound is a field of
`ServerLimits`, which `SMCPServer(limits=...)` takes; the defaults suit a Server reached
directly or through a proxy that keeps client addresses apart (docs/server/security.md).
"""

from __future__ import annotations

from typing import Any

import attrs

#: Seconds an Engine.IO connection may stay without a Socket.IO namespace (the CONNECT
#: packet that carries the credentials) before it is closed.
DEFAULT_HANDSHAKE_TIMEOUT = 5.0
#: Bytes a connection may send (its messages, in all) before its namespace CONNECT is
#: accepted (a CONNECT carrying credentials is small); past it the connection is closed
#: unread, so an unauthenticated client never has the Server hold or decode messages of
#: `max_http_buffer_size`.
DEFAULT_MAX_UNAUTHENTICATED_BYTES = 8 * 1024
#: Refused namespace CONNECTs (wrong key, unknown namespace) one Engine.IO connection may
#: have: the refusal that reaches it also closes the connection.
DEFAULT_MAX_AUTH_FAILURES_PER_SOCKET = 3
#: Refused namespace CONNECTs one client address may make within `AUTH_FAILURE_WINDOW`
#: seconds before it is backed off (`auth_failures`); None: never backed off.
DEFAULT_MAX_AUTH_FAILURES_PER_IP = 10
#: Seconds a client has to send a request's line and headers (also: to start its next
#: request on a kept-alive connection). Under `serve()` a legitimate client queued behind
#: hostile ones waits for this to free threads: short.
DEFAULT_HEADER_TIMEOUT = 5.0
#: Seconds one read of a request body (or one write of a response) may block.
DEFAULT_READ_TIMEOUT = 30.0
#: Open Engine.IO connections one client address may have (security.md: 100 per IP).
DEFAULT_MAX_CONNECTIONS_PER_IP = 100
#: Bytes of messages waiting to be sent to one client; past it the client is dropped.
DEFAULT_MAX_SEND_BACKLOG = 32 * 1024 * 1024
#: Worker threads of `serve()`; each open connection holds one, and they start on demand.
#: Well above the per-address cap: with 100, 200 hostile sockets from a few addresses kept
#: a legitimate Agent waiting ~10 s (benchmarks/README.md, run G).
DEFAULT_SERVE_THREADS = 400
#: `serve()`'s modes: a thread per open connection (gunicorn's gthread worker), or
#: greenlets (its gevent worker; docs/server/deployment.md).
SERVE_MODES = ("threads", "gevent")
#: Open connections `serve(mode="gevent")` holds at most (gunicorn's `worker_connections`):
#: an idle one costs the worker about 40 KB and no thread (benchmarks/README.md, capacity).
DEFAULT_SERVE_CONNECTIONS = 10_000


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{attribute.name} must be a number > 0, got {value!r}")


def _positive_int(instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, got {value!r}")


def _positive_int_or_none(instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None:
        _positive_int(instance, attribute, value)


@attrs.frozen
class ServerLimits:
    """The bounds, validated. `max_connections_per_ip=None` turns the per-address cap off
    and `max_auth_failures_per_ip=None` the per-address backoff (behind a proxy that does
    not pass distinct client addresses, every client has the proxy's)."""

    handshake_timeout: float = attrs.field(default=DEFAULT_HANDSHAKE_TIMEOUT, validator=_positive)
    header_timeout: float = attrs.field(default=DEFAULT_HEADER_TIMEOUT, validator=_positive)
    read_timeout: float = attrs.field(default=DEFAULT_READ_TIMEOUT, validator=_positive)
    max_connections_per_ip: int | None = attrs.field(
        default=DEFAULT_MAX_CONNECTIONS_PER_IP, validator=_positive_int_or_none
    )
    max_send_backlog: int = attrs.field(default=DEFAULT_MAX_SEND_BACKLOG, validator=_positive_int)
    max_unauthenticated_bytes: int = attrs.field(default=DEFAULT_MAX_UNAUTHENTICATED_BYTES, validator=_positive_int)
    max_auth_failures_per_socket: int = attrs.field(default=DEFAULT_MAX_AUTH_FAILURES_PER_SOCKET, validator=_positive_int)
    max_auth_failures_per_ip: int | None = attrs.field(default=DEFAULT_MAX_AUTH_FAILURES_PER_IP, validator=_positive_int_or_none)

