"""`smcp-sync server`: run the SMCP Server in the foreground (gunicorn: the gthread worker,
or with --mode gevent the gevent one).

Prints ``smcp-sync server listening on URL`` (with --json: ``{"url": URL}``) once
bound; runs until Ctrl-C or SIGTERM (exit 0). A port already in use is exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT
from ..server.auth import KEY_FIELDS, KEY_HEADERS, APIKeyAuth
from ..server.limits.limits import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_AUTH_FAILURES_PER_IP,
    DEFAULT_MAX_AUTH_FAILURES_PER_SOCKET,
    DEFAULT_MAX_CONNECTIONS_PER_IP,
    DEFAULT_MAX_SEND_BACKLOG,
    DEFAULT_MAX_UNAUTHENTICATED_BYTES,
    DEFAULT_SERVE_CONNECTIONS,
    DEFAULT_SERVE_THREADS,
    SERVE_MODES,
    ServerLimits,
)
from ..server.observability import AdminUI, Observability
from ..server.scale_out.redis_options import RedisOptions
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .options import add_api_key, add_json, fail, port_number, port_problem, positive_count, positive_seconds


#: Where --admin-password is read from when not given (a command line is visible to `ps`).
ADMIN_PASSWORD_ENV = "SMCP_ADMIN_PASSWORD"


def count_or_zero(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    return 0 if text.strip() == "0" else positive_count(text)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "server",
        help="run the SMCP Server (Socket.IO namespace /smcp)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="TCP port; 0 picks a free one (default: 8000)")
    add_api_key(parser, "key clients must present (auth dict or HTTP header); none = no auth")
    parser.add_argument(
        "--api-key-field",
        action="append",
        metavar="FIELD",
        help=f"Socket.IO auth dict field the key may be in; repeatable (default: {', '.join(KEY_FIELDS)})",
    )
    parser.add_argument(
        "--api-key-header",
        action="append",
        metavar="HEADER",
        help=f"HTTP header the key may be in (Authorization: as 'Bearer KEY'); repeatable (default: {', '.join(KEY_HEADERS)})",
    )
    parser.add_argument(
        "--require-client-version",
        action="store_true",
        help="refuse clients that send no a2c_version (official 0.1.x SDKs), as protocol 0.3 says",
    )
    parser.add_argument(
        "--mode",
        choices=SERVE_MODES,
        default="threads",
        help="threads: gthread worker, a thread per request, every open websocket read by one reactor thread; "
        "gevent: greenlets (gevent worker; needs smcp_sync[gevent]) (default: threads)",
    )
    parser.add_argument(
        "--threads",
        type=positive_count,
        default=DEFAULT_SERVE_THREADS,
        help=f"--mode threads: worker threads = most requests served at once (default: {DEFAULT_SERVE_THREADS})",
    )
    parser.add_argument(
        "--connections",
        type=positive_count,
        default=DEFAULT_SERVE_CONNECTIONS,
        metavar="N",
        help=f"most concurrent connections (--mode threads: websockets) (default: {DEFAULT_SERVE_CONNECTIONS})",
    )
    parser.add_argument(
        "--request-timeout",
        type=positive_seconds,
        default=DEFAULT_REQUEST_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds to wait for a Computer's answer, tool calls excepted (default: {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    limits = parser.add_argument_group("bounds on what one client may hold (docs/server/security.md)")
    limits.add_argument(
        "--handshake-timeout",
        type=positive_seconds,
        default=DEFAULT_HANDSHAKE_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds to connect /smcp with a valid key before the connection is cut (default: {DEFAULT_HANDSHAKE_TIMEOUT:g})",
    )
    limits.add_argument(
        "--header-timeout",
        type=positive_seconds,
        default=DEFAULT_HEADER_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds to send a request line and headers (default: {DEFAULT_HEADER_TIMEOUT:g})",
    )
    limits.add_argument(
        "--max-connections-per-ip",
        type=count_or_zero,
        default=DEFAULT_MAX_CONNECTIONS_PER_IP,
        metavar="N",
        help=f"open connections per client address; 0 = no cap, e.g. behind a proxy (default: {DEFAULT_MAX_CONNECTIONS_PER_IP})",
    )
    limits.add_argument(
        "--max-send-backlog",
        type=positive_count,
        default=DEFAULT_MAX_SEND_BACKLOG,
        metavar="BYTES",
        help=f"bytes waiting to be sent to one client before it is dropped (default: {DEFAULT_MAX_SEND_BACKLOG})",
    )
    limits.add_argument(
        "--max-unauthenticated-bytes",
        type=positive_count,
        default=DEFAULT_MAX_UNAUTHENTICATED_BYTES,
        metavar="BYTES",
        help=f"bytes a connection may send before its key is accepted (default: {DEFAULT_MAX_UNAUTHENTICATED_BYTES})",
    )
    limits.add_argument(
        "--max-auth-failures-per-socket",
        type=positive_count,
        default=DEFAULT_MAX_AUTH_FAILURES_PER_SOCKET,
        metavar="N",
        help=f"refused keys that close a connection (default: {DEFAULT_MAX_AUTH_FAILURES_PER_SOCKET})",
    )
    limits.add_argument(
        "--max-auth-failures-per-ip",
        type=count_or_zero,
        default=DEFAULT_MAX_AUTH_FAILURES_PER_IP,
        metavar="N",
        help="refused keys per client address in a minute before it is backed off; 0 = no backoff, e.g. behind a proxy "
        f"(default: {DEFAULT_MAX_AUTH_FAILURES_PER_IP})",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="share offices with every Server given the same Redis (redis://host:6379/0, rediss:// for TLS, "
        "redis+sentinel://host:26379,host:26379/0/mymaster); needs smcp_sync[redis]",
    )
    parser.add_argument(
        "--redis-prefix",
        metavar="PREFIX",
        help="the deployment's prefix of every Redis key and channel, the same on each of its Servers (default: smcp:<database>:)",
    )
    admin = parser.add_argument_group("the Socket.IO Admin UI on the /admin namespace (docs/server/operations.md)")
    admin.add_argument("--admin-user", metavar="NAME", help="turn the Admin UI on for this user (default: off)")
    admin.add_argument(
        "--admin-password",
        default=os.environ.get(ADMIN_PASSWORD_ENV),
        metavar="PASSWORD",
        help=f"the Admin UI user's password (default: ${ADMIN_PASSWORD_ENV})",
    )
    admin.add_argument(
        "--admin-read-write", action="store_true", help="let the Admin UI disconnect clients and change rooms (default: read-only)"
    )
    add_json(parser, 'print the ready line as JSON: {"url": URL}')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    try:
        from ..server.app import SMCPServer  # here: the `server` extra, which agent/computer need not
    except ImportError as exc:
        return fail("server", str(exc), EXIT_FAILURE)
    if args.admin_user and not args.admin_password:
        return fail("server", f"--admin-user needs --admin-password (or ${ADMIN_PASSWORD_ENV})", EXIT_USAGE)
    problem = port_problem(args.host, args.port)
    if problem:
        return fail("server", problem, EXIT_FAILURE)
    if args.api_key:
        auth = APIKeyAuth(args.api_key, fields=args.api_key_field or KEY_FIELDS, headers=args.api_key_header or KEY_HEADERS)
    else:
        auth = None
        print("smcp-sync server: no API key given: every client is accepted", file=sys.stderr)
    if args.redis_prefix and not args.redis:
        return fail("server", "--redis-prefix names a deployment in Redis: give --redis too", EXIT_USAGE)
    try:
        server = SMCPServer(
            auth=auth,
            limits=_limits(args),
            redis=RedisOptions(args.redis, prefix=args.redis_prefix) if args.redis else None,
            observability=Observability(admin=_admin(args)),
            request_timeout=args.request_timeout,
            require_client_version=args.require_client_version,
        )
    except (RuntimeError, ValueError) as exc:  # no redis client; a Redis URL of no accepted form; a bad bound
        return fail("server", str(exc), EXIT_FAILURE)
    try:
        server.serve(
            args.host,
            args.port,
            mode=args.mode,
            threads=args.threads,
            connections=args.connections,
            on_ready=lambda url: _ready(url, args.json),
        )
    except RuntimeError as exc:  # --mode gevent without gevent installed
        return fail("server", str(exc), EXIT_FAILURE)
    return EXIT_OK


def _limits(args: argparse.Namespace) -> ServerLimits:
    """The bounds the options give; 0 turns a per-address one off."""
    return ServerLimits(
        handshake_timeout=args.handshake_timeout,
        header_timeout=args.header_timeout,
        max_connections_per_ip=args.max_connections_per_ip or None,
        max_send_backlog=args.max_send_backlog,
        max_unauthenticated_bytes=args.max_unauthenticated_bytes,
        max_auth_failures_per_socket=args.max_auth_failures_per_socket,
        max_auth_failures_per_ip=args.max_auth_failures_per_ip or None,
    )


def _admin(args: argparse.Namespace) -> AdminUI | None:
    if not args.admin_user:
        return None
    return AdminUI(args.admin_user, args.admin_password, read_only=not args.admin_read_write)


def _ready(url: str, as_json: bool) -> None:
    print(json.dumps({"url": url}) if as_json else f"smcp-sync server listening on {url}", flush=True)
