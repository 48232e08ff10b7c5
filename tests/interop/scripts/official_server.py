"""Run the official SDK's SYNC Server (a2c-smcp 0.1.6) and trace its wire traffic as JSON lines.

Usage (with the official venv's python)::

    python official_server.py [--host 127.0.0.1] [--port 0] [--api-key test-key] [--no-trace]

Stack: ``a2c_smcp.server.SyncSMCPNamespace`` registered on a python-socketio threading
``Server`` (``async_mode="threading"``, default ``async_handlers=True``), wrapped in
``socketio.WSGIApp`` and served by werkzeug's threaded WSGI server (websocket upgrade
works through simple-websocket). The SDK's ``DefaultSyncAuthenticationProvider`` reads the
key from ``environ['asgi.scope']['headers']`` / ``environ['HTTP_HEADERS']``, which a WSGI
server never fills, so it refuses every WSGI client; this script plugs in its own
``SyncAuthenticationProvider`` that accepts the key from the Socket.IO ``auth`` dict
(``{"access_token": key}``) or from the HTTP header ``access_token`` (environ
``HTTP_ACCESS_TOKEN``).

stdout (one JSON object per line):

* ``{"event":"listening","url":"http://127.0.0.1:PORT","port":PORT}`` when ready;
* ``{"event":"auth","ok":bool,"via":[...],"auth_keys":[...],"transport":...}`` per connect;
* with tracing (default): ``recv`` (event received: name, sid, data), ``handled``
  (handler's return value = the ack), ``handler_error`` (handler raised: NO ack is sent),
  ``send`` (namespace emit: name, data, room, skip_sid), ``call`` / ``call_result`` /
  ``call_error`` (server-to-computer routed calls), ``connect`` / ``disconnect``;
* ``{"event":"stopped"}`` on exit.

Stops on SIGTERM/SIGINT or when stdin reaches EOF.
"""

from __future__ import annotations

import _common  # noqa: I001  (must come first: reserves stdout for JSON lines)

import os
import signal
import sys
import threading
from urllib.parse import parse_qs

from _common import emit, error_info


def main() -> int:
    parser = _common.script_arguments(__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-trace", action="store_true", help="only print listening/auth/stopped")
    args = _common.parse_arguments(parser)

    import logging

    import socketio
    from werkzeug.serving import make_server

    from a2c_smcp.server import SyncAuthenticationProvider, SyncSMCPNamespace

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    trace = not args.no_trace
    api_key = args.api_key

    class KeyAuth(SyncAuthenticationProvider):
        def authenticate(self, sio, environ, auth, headers):  # noqa: ANN001
            via = []
            if isinstance(auth, dict) and auth.get("access_token") == api_key:
                via.append("auth")
            if environ.get("HTTP_ACCESS_TOKEN") == api_key:
                via.append("header")
            query = parse_qs(environ.get("QUERY_STRING", ""))
            emit(
                {
                    "event": "auth",
                    "ok": bool(via),
                    "via": via,
                    "auth_type": type(auth).__name__,
                    "auth_keys": sorted(auth) if isinstance(auth, dict) else None,
                    "header_present": "HTTP_ACCESS_TOKEN" in environ,
                    "sdk_headers_arg": list(headers) if headers else [],
                    "transport": (query.get("transport") or [None])[0],
                    "eio": (query.get("EIO") or [None])[0],
                    "user_agent": environ.get("HTTP_USER_AGENT"),
                }
            )
            return bool(via)

    class TracingNamespace(SyncSMCPNamespace):
        def trigger_event(self, event, *args):  # noqa: ANN001
            sid = args[0] if args else None
            if trace:
                if event == "connect":
                    emit({"event": "connect", "sid": sid})
                elif event == "disconnect":
                    emit({"event": "disconnect", "sid": sid, "reason": args[1] if len(args) > 1 else None})
                else:
                    emit({"event": "recv", "name": event, "sid": sid, "data": list(args[1:])})
            try:
                result = super().trigger_event(event, *args)
            except Exception as exc:
                if trace:
                    emit({"event": "handler_error", "name": event, "sid": sid, **error_info(exc)})
                raise
            if trace and event not in ("connect", "disconnect"):
                emit({"event": "handled", "name": event, "sid": sid, "return": result})
            return result

        def emit(self, event, data=None, *args, **kwargs):  # noqa: ANN001
            if trace:
                emit(
                    {
                        "event": "send",
                        "name": event,
                        "data": data,
                        "room": kwargs.get("room"),
                        "to": kwargs.get("to"),
                        "skip_sid": kwargs.get("skip_sid"),
                    }
                )
            return super().emit(event, data, *args, **kwargs)

        def call(self, event, data=None, *args, **kwargs):  # noqa: ANN001
            if trace:
                emit({"event": "call", "name": event, "data": data, "to": kwargs.get("to"), "timeout": kwargs.get("timeout")})
            try:
                result = super().call(event, data, *args, **kwargs)
            except Exception as exc:
                if trace:
                    emit({"event": "call_error", "name": event, **error_info(exc)})
                raise
            if trace:
                emit({"event": "call_result", "name": event, "data": result})
            return result

    sio = socketio.Server(async_mode="threading")
    sio.register_namespace(TracingNamespace(KeyAuth()))
    app = socketio.WSGIApp(sio)

    server = make_server(args.host, args.port, app, threaded=True)
    port = server.server_port
    thread = threading.Thread(target=server.serve_forever, name="werkzeug", daemon=True)
    thread.start()
    emit({"event": "listening", "url": f"http://{args.host}:{port}", "port": port, "pid": os.getpid()})

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    _common.start_stdin_watcher(lambda line: None, stop.set)
    while not stop.wait(0.5):
        pass

    emit({"event": "stopped"})
    # Connected websockets keep werkzeug worker threads busy; do not wait for them.
    stopper = threading.Thread(target=server.shutdown, daemon=True)
    stopper.start()
    stopper.join(3)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
