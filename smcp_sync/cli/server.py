"""`smcp-sync server`: run the SMCP Server in the foreground (gunicorn, gthread worker)."""

from __future__ import annotations

import argparse
import os
import sys

from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT
from ..server import APIKeyAuth, SMCPServer
from ..server.app import DEFAULT_SERVE_THREADS

#: Read when --api-key is not given, so the key need not appear in the process list.
API_KEY_ENV = "SMCP_API_KEY"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("server", help="run the SMCP Server (Socket.IO namespace /smcp)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port; 0 picks a free one (default: 8000)")
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV),
        help=f"key clients must present in their Socket.IO auth dict (default: ${API_KEY_ENV}; none = no auth)",
    )
    parser.add_argument(
        "--api-key-field",
        default="api_key",
        help="auth dict field holding the key (default: api_key; access_token is always accepted)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=DEFAULT_SERVE_THREADS,
        help=f"worker threads = most concurrent connections (default: {DEFAULT_SERVE_THREADS})",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT,
        help=f"seconds to wait for a Computer's answer, tool calls excepted (default: {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.threads < 1 or args.request_timeout <= 0 or not 0 <= args.port <= 65535:
        print("smcp-sync server: --threads must be >= 1, --request-timeout > 0, --port 0-65535", file=sys.stderr)
        return 2
    if args.api_key:
        auth = APIKeyAuth(args.api_key, field=args.api_key_field)
    else:
        auth = None
        print("smcp-sync server: no API key given: every client is accepted", file=sys.stderr)
    server = SMCPServer(auth=auth, request_timeout=args.request_timeout)
    server.serve(
        args.host,
        args.port,
        threads=args.threads,
        on_ready=lambda url: print(f"smcp-sync server listening on {url}", flush=True),
    )
    return 0
