"""Run the official SDK's SYNC Server (a2c-smcp 0.4.x or 0.1.x) and trace its wire traffic as JSON lines.

Usage (with an official venv's python)::

    python official_server.py [--host 127.0.0.1] [--port 0] [--api-key test-key] [--no-trace]
        [--no-version-gate] [--gate-version X.Y.Z] [--asgi]

Stack: ``a2c_smcp.server.SyncSMCPNamespace`` registered on a python-socketio threading
``Server`` (``async_mode="threading"``, default ``async_handlers=True``), wrapped in
``socketio.WSGIApp`` and served by werkzeug's threaded WSGI server (websocket upgrade
works through simple-websocket). Authentication, by SDK version:

* 0.4.x: the SDK's own ``DefaultSyncAuthenticationProvider(admin_secret=KEY)``, which reads
  the key from the Socket.IO auth dict field ``token`` (works under WSGI), and the SDK's
  ``A2CProtocolVersionWSGIMiddleware`` around the app (on unless ``--no-version-gate``):
  a connection without a compatible ``a2c_version`` query gets HTTP 400 before Socket.IO
  (``--gate-version`` makes the gate speak another version than the SDK's, to provoke 4008).
* 0.1.x: the SDK's ``DefaultSyncAuthenticationProvider`` reads the key from
  ``environ['asgi.scope']['headers']`` / ``environ['HTTP_HEADERS']``, which a WSGI server
  never fills, so it refuses every WSGI client; this script plugs in its own
  ``SyncAuthenticationProvider`` that accepts the key from the Socket.IO ``auth`` dict
  (``{"access_token": key}``) or from the HTTP header ``access_token`` (environ
  ``HTTP_ACCESS_TOKEN``).

``--asgi`` runs the SDK's async Server instead, stock: ``SMCPNamespace`` with the SDK's own
``DefaultAuthenticationProvider(admin_secret=KEY)`` on a ``socketio.AsyncServer`` under uvicorn
(0.1.x: the key from the HTTP header ``access_token``, which ASGI passes; 0.4.x: from
``auth.token``, behind ``A2CProtocolVersionASGIMiddleware``). It prints ``listening``, one
``auth`` line per connect (``header_names`` instead of the WSGI details) and ``stopped``;
events are not traced.

stdout (one JSON object per line):

* ``{"event":"listening","url":"http://127.0.0.1:PORT","port":PORT,"sdk":"0.4.2","version_gate":bool}`` when ready;
* ``{"event":"auth","ok":bool,"via":[...],"auth_keys":[...],"transport":...,"a2c_version":...}`` per connect;
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
    parser.add_argument("--no-version-gate", action="store_true", help="0.4.x: leave out the version middleware")
    parser.add_argument("--gate-version", default=None, help="0.4.x: the version the gate speaks (default: the SDK's)")
    parser.add_argument("--asgi", action="store_true", help="the SDK's stock async Server under uvicorn")
    args = _common.parse_arguments(parser)
    handshake = _common.speaks_handshake()
    if args.asgi:
        return serve_asgi(args, handshake)

    import logging

    import socketio
    from werkzeug.serving import make_server

    from a2c_smcp.server import DefaultSyncAuthenticationProvider, SyncAuthenticationProvider, SyncSMCPNamespace

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    trace = not args.no_trace
    api_key = args.api_key

    def report(environ, auth, via) -> None:  # noqa: ANN001
        query = parse_qs(environ.get("QUERY_STRING", ""))
        emit(
            {
                "event": "auth",
                "ok": bool(via),
                "via": via,
                "auth_type": type(auth).__name__,
                "auth_keys": sorted(auth) if isinstance(auth, dict) else None,
                "header_present": "HTTP_ACCESS_TOKEN" in environ,
                "transport": (query.get("transport") or [None])[0],
                "eio": (query.get("EIO") or [None])[0],
                "a2c_version": (query.get("a2c_version") or [None])[0],
                "user_agent": environ.get("HTTP_USER_AGENT"),
            }
        )

    class SdkAuth(DefaultSyncAuthenticationProvider):
        """0.4.x: the SDK's default provider (key in ``auth.token``), reported."""

        def authenticate(self, sio, environ, auth, headers):  # noqa: ANN001
            ok = super().authenticate(sio, environ, auth, headers)
            report(environ, auth, ["auth.token"] if ok else [])
            return ok

    class KeyAuth(SyncAuthenticationProvider):
        """0.1.x: the key from ``auth.access_token`` or the ``access_token`` header."""

        def authenticate(self, sio, environ, auth, headers):  # noqa: ANN001
            via = []
            if isinstance(auth, dict) and auth.get("access_token") == api_key:
                via.append("auth")
            if environ.get("HTTP_ACCESS_TOKEN") == api_key:
                via.append("header")
            report(environ, auth, via)
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
    sio.register_namespace(TracingNamespace(SdkAuth(admin_secret=api_key) if handshake else KeyAuth()))
    app = socketio.WSGIApp(sio)
    version_gate = handshake and not args.no_version_gate
    if version_gate:
        from a2c_smcp.server import A2CProtocolVersionWSGIMiddleware

        gate_options = {"server_version": args.gate_version} if args.gate_version else {}
        app = A2CProtocolVersionWSGIMiddleware(app, **gate_options)

    server = make_server(args.host, args.port, app, threaded=True)
    port = server.server_port
    thread = threading.Thread(target=server.serve_forever, name="werkzeug", daemon=True)
    thread.start()
    announce(args.host, port, version_gate)

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


def announce(host: str, port: int, version_gate: bool) -> None:
    emit(
        {
            "event": "listening",
            "url": f"http://{host}:{port}",
            "port": port,
            "pid": os.getpid(),
            "sdk": ".".join(map(str, _common.sdk_version())),
            "version_gate": version_gate,
        }
    )


def serve_asgi(args, handshake: bool) -> int:  # noqa: ANN001
    """The SDK's async Server, stock, under uvicorn on the given port; stops on stdin EOF or SIGTERM."""
    import asyncio
    import socket

    import socketio
    import uvicorn

    from a2c_smcp.server import DefaultAuthenticationProvider, SMCPNamespace

    class ReportedAuth(DefaultAuthenticationProvider):
        async def authenticate(self, sio, environ, auth, headers):  # noqa: ANN001
            ok = await super().authenticate(sio, environ, auth, headers)
            names = sorted({(h[0].decode("latin-1") if isinstance(h[0], bytes) else str(h[0])).lower() for h in headers})
            query = parse_qs(environ.get("QUERY_STRING", ""))
            emit(
                {
                    "event": "auth",
                    "ok": bool(ok),
                    "auth_keys": sorted(auth) if isinstance(auth, dict) else None,
                    "header_names": names,
                    "transport": (query.get("transport") or [None])[0],
                    "a2c_version": (query.get("a2c_version") or [None])[0],
                }
            )
            return ok

    sio = socketio.AsyncServer(async_mode="asgi")
    sio.register_namespace(SMCPNamespace(ReportedAuth(admin_secret=args.api_key)))
    app = socketio.ASGIApp(sio)
    version_gate = handshake and not args.no_version_gate
    if version_gate:
        from a2c_smcp.server import A2CProtocolVersionASGIMiddleware

        gate_options = {"server_version": args.gate_version} if args.gate_version else {}
        app = A2CProtocolVersionASGIMiddleware(app, **gate_options)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    def stop() -> None:
        server.should_exit = True

    async def run() -> None:
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.05)
        announce(args.host, sock.getsockname()[1], version_gate)
        await serving

    _common.start_stdin_watcher(lambda line: None, stop)
    asyncio.run(run())  # uvicorn turns SIGTERM / SIGINT into should_exit
    emit({"event": "stopped"})
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
