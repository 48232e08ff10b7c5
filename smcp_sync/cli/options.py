"""Options and messages every sub-command shares, so that the same flag means the same
thing everywhere (``--url``, ``--office``, ``--name``, ``--api-key``, ``--timeout``,
``--json``) and every failure is one line on stderr.

Argument values are checked by argparse types: a bad one is a usage error (exit 2) that
names the flag, before anything starts.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

from ..connection.client_auth import DEFAULT_KEY_FIELDS, checked_headers, key_auth, key_headers
from ..protocol.redaction import redact_text

#: Read when --api-key is not given, so the key need not appear in the process list.
API_KEY_ENV = "SMCP_API_KEY"

_URL_SCHEMES = ("http", "https", "ws", "wss")


def server_url(text: str) -> str:
    """An argparse type: the Server's URL, ``http(s)://host[:port]`` (or ``ws(s)://``)."""
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises ValueError for a port that is not a number 0-65535
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL: {exc}") from None
    if parts.scheme not in _URL_SCHEMES or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT (or https, ws, wss), got {text!r}")
    return text


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a number > 0), got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def positive_count(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def finder_limit(text: str) -> int:
    """An argparse type: a Finder page size, 1 to `MAX_FINDER_LIMIT` (refused here, exit 2,
    rather than by the Agent after connecting)."""
    from ..protocol.models import MAX_FINDER_LIMIT

    value = positive_count(text)
    if value > MAX_FINDER_LIMIT:
        raise argparse.ArgumentTypeError(f"must be 1-{MAX_FINDER_LIMIT}, got {value}")
    return value


def whole_number(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535, got {value}")
    return value


def add_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, type=server_url, help="the Server's URL, e.g. http://127.0.0.1:8000")


def add_api_key(parser: argparse.ArgumentParser, help: str = "the Server's API key") -> None:
    parser.add_argument(
        "--api-key", default=os.environ.get(API_KEY_ENV), help=f"{help} (default: ${API_KEY_ENV})"
    )


def add_timeout(parser: argparse.ArgumentParser, default: float, help: str) -> None:
    parser.add_argument(
        "--timeout", type=positive_seconds, default=default, metavar="SECONDS", help=f"{help} (default: {default:g})"
    )


def add_json(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--json", action="store_true", help=help)


def http_header(text: str) -> tuple[str, str]:
    """An argparse type: ``NAME:VALUE``, an extra HTTP header for the connect request."""
    name, colon, value = text.partition(":")
    if not colon:
        raise argparse.ArgumentTypeError(f"expected NAME:VALUE, got {text!r:.80}")
    try:
        [(name, value)] = checked_headers({name.strip(): value.strip()}).items()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name, value


def add_client_auth(parser: argparse.ArgumentParser) -> None:
    """--api-key and where a client puts it, so it reaches our Server, a2c-smcp 0.4.2's
    (auth dict `token`) and 0.1.6's (HTTP header `access_token`) with their default auth."""
    add_api_key(parser)
    parser.add_argument(
        "--api-key-field",
        action="append",
        metavar="FIELD",
        help=f"Socket.IO auth dict field to put the key in; repeatable (default: {', '.join(DEFAULT_KEY_FIELDS)})",
    )
    parser.add_argument(
        "--api-key-header",
        action="append",
        metavar="HEADER",
        help="also send the key as this HTTP header (Authorization: as 'Bearer KEY'; "
        "access_token: what official 0.1.x Servers read); repeatable",
    )
    parser.add_argument(
        "--header", action="append", type=http_header, metavar="NAME:VALUE", help="an extra HTTP header; repeatable"
    )


def client_credentials(args: argparse.Namespace) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The auth dict and HTTP headers that `add_client_auth`'s options ask for. Raises
    ValueError for a --api-key-header that is not a valid header name."""
    headers = dict(args.header or ())
    if not args.api_key:
        return None, headers
    for name in args.api_key_header or ():
        headers.update(key_headers(args.api_key, name))
    return key_auth(args.api_key, args.api_key_field or DEFAULT_KEY_FIELDS), headers


def failure(exc: Exception) -> str:
    """The one-line message of a failed command; a refused key says how to give one."""
    from ..protocol.errors import AuthError

    if isinstance(exc, AuthError):
        return f"{exc} (give the Server's API key with --api-key KEY or ${API_KEY_ENV})"
    return str(exc)


def fail(command: str, message: str, code: int) -> int:
    """Print ``smcp-sync COMMAND: message`` on stderr, credentials masked (a URL it
    quotes), and return the exit code `code`."""
    print(f"smcp-sync {command}: {redact_text(message)}", file=sys.stderr)
    return code


def port_problem(host: str, port: int) -> str | None:
    """Why (host, port) cannot be listened on, or None. Checked before starting a Server,
    whose WSGI servers report a busy port late and verbosely (gunicorn retries for
    seconds; werkzeug exits the process)."""
    if port == 0:
        return None
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as both servers do
            probe.bind((host, port))
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None
