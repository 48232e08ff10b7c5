"""Shared bits of the interop scripts (run by the official SDK venv's python, standard
library only): their common command-line options, JSON lines on stdout, the stdin watcher.

Import this module FIRST: ``setup_stdout()`` must run before ``a2c_smcp`` is imported,
because the SDK attaches a logging handler to ``sys.stdout`` at import time. We keep the
real stdout for our JSON lines only and send everything else (SDK logs, rich output,
library prints) to stderr.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_out = None
_t0 = time.monotonic()


def sdk_version() -> tuple[int, ...]:
    """The installed a2c-smcp version as a tuple (read from its metadata, without importing it)."""
    return tuple(int(part) for part in importlib.metadata.version("a2c-smcp").split(".")[:3])


def speaks_handshake() -> bool:
    """a2c-smcp 0.4+: version handshake (``a2c_version`` query, HTTP version gate),
    ``auth.token`` by default, flat error payloads, BundleID tool names."""
    return sdk_version() >= (0, 4)


def setup_stdout(log_level: str | None = None) -> None:
    """Reserve the real stdout for JSON lines; route every other stdout write to stderr."""
    global _out
    if _out is not None:
        return
    if log_level:
        os.environ["A2C_SMCP_LOG_LEVEL"] = log_level
    fd = os.dup(1)
    _out = os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="replace")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:  # pragma: no cover - best effort
            pass
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return repr(obj)


def emit(obj: dict) -> None:
    """Print one JSON line (thread-safe). Adds ``t`` (seconds since start)."""
    line = dict(obj)
    line.setdefault("t", round(time.monotonic() - _t0, 4))
    text = json.dumps(line, ensure_ascii=False, default=_default)
    with _lock:
        stream = _out if _out is not None else sys.stdout
        stream.write(text + "\n")
        stream.flush()


def load_json_arg(value: str) -> Any:
    """A JSON document given inline, as ``@path`` or as a path to an existing file."""
    text = value.strip()
    if text.startswith("@"):
        return json.loads(Path(text[1:]).read_text(encoding="utf-8"))
    if text[:1] in "[{\"" or text in ("null", "true", "false") or text[:1].isdigit():
        return json.loads(text)
    path = Path(text)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return json.loads(text)


def error_info(exc: BaseException) -> dict:
    return {"error_type": f"{type(exc).__module__}.{type(exc).__qualname__}", "error": str(exc)}


def script_arguments(description: str) -> argparse.ArgumentParser:
    """The options of every script: its docstring as ``--help``, the key and the SDK's log level."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api-key", default="test-key", help="the key the client presents / the server accepts")
    parser.add_argument("--log-level", default="warning", help="SDK log level (to stderr)")
    return parser


def client_arguments(description: str) -> argparse.ArgumentParser:
    """``script_arguments`` plus what a client (Agent, Computer) needs: the server, office and
    name, the Socket.IO namespace, how to present the key, and the transports."""
    parser = script_arguments(description)
    parser.add_argument("--url", required=True)
    parser.add_argument("--office", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--namespace", default="/smcp")
    parser.add_argument(
        "--auth-via",
        choices=("sdk", "auth", "header", "both", "none"),
        default="auth",
        help="how to present the key: 'sdk' = the installed SDK's own default (0.4.x: Socket.IO "
        "auth dict {'token': key}; 0.1.x: HTTP header 'access_token: key'), 'auth' = auth dict "
        "{'access_token': key}, 'header' = HTTP header 'access_token: key', both of the last "
        "two, or not at all",
    )
    parser.add_argument(
        "--transports",
        default=None,
        help="comma separated Engine.IO transports (default: the client's own default, "
        "i.e. polling then upgrade to websocket)",
    )
    return parser


def key_presentation(auth_via: str, key: str) -> tuple[dict | None, dict | None]:
    """``(auth dict, HTTP headers)`` that present ``key`` as ``--auth-via`` asks."""
    if auth_via == "sdk":
        return ({"token": key}, None) if speaks_handshake() else (None, {"access_token": key})
    auth = {"access_token": key} if auth_via in ("auth", "both") else None
    headers = {"access_token": key} if auth_via in ("header", "both") else None
    return auth, headers


def parse_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse the command line, then reserve stdout (``setup_stdout``) before the SDK is imported."""
    args = parser.parse_args()
    setup_stdout(args.log_level)
    return args


def start_stdin_watcher(on_line, on_eof) -> threading.Thread:
    """Read stdin lines in a daemon thread; call ``on_line(str)`` per line and ``on_eof()`` at EOF."""

    def run() -> None:
        try:
            for raw in sys.stdin:
                line = raw.strip()
                if line:
                    on_line(line)
        except (OSError, ValueError):
            pass
        on_eof()

    thread = threading.Thread(target=run, name="stdin-watcher", daemon=True)
    thread.start()
    return thread
