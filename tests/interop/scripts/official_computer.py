"""Run the official SDK's Computer (a2c-smcp 0.4.x or 0.1.x) against an SMCP server and trace it as JSON lines.

Usage (with an official venv's python)::

    python official_computer.py --url http://127.0.0.1:PORT --office OFFICE --name NAME \
        [--api-key test-key] [--auth-via sdk|auth|header|both|none] [--transports polling,websocket] \
        --mcp-config CONFIG [--confirm approve|deny|none] [--no-join]

``CONFIG`` is JSON inline, ``@path`` or a path: one MCP server config, a list of them, or
``{"servers": {name: config} | [config...], "inputs": [...]}`` in the SDK's own format, e.g.
``{"name":"echo","type":"stdio","server_parameters":{"command":PY,"args":[SCRIPT]},
"default_tool_meta":{"auto_apply":true}}`` (missing fields take the SDK model's defaults).

What runs: ``a2c_smcp.computer.computer.Computer(name, mcp_servers=..., confirm_callback=...)``
booted with ``boot_up()`` (starts the MCP servers), and the SDK's Socket.IO client
``SMCPComputerClient`` (a ``socketio.AsyncClient``) connected with
``connect(url, auth=..., headers=..., namespaces=["/smcp"])`` — exactly what the SDK's CLI
does (0.4.x adds the ``a2c_version`` query itself) — then ``join_office(office)`` (an acked
``server:join_office`` call). The Computer holds no key: ``--auth-via`` says how the script
presents it (``sdk``: what that SDK's Server reads by default, see ``_common``).
``--confirm approve`` (default) passes a confirm callback that approves every tool call, so
tools without ``auto_apply`` still run; ``none`` passes no callback (the SDK then refuses such
tools).

stdout (JSON lines): ``booted`` (local tool names), ``connected`` (sid, transport),
``joined`` / ``join_failed``, ``recv`` / ``reply`` / ``handler_error`` for every ``client:*``
request the Computer handles (a handler error means NO ack was sent), ``notify`` for every
``notify:*`` it receives (0.1.x ignores them all; 0.4.x handles ``notify:tool_call_cancel``,
traced before its handler runs),
``send`` / ``ack`` for what it emits, ``result`` per stdin command, ``exit``.

stdin: one JSON command per line: ``{"op":"leave"}``, ``{"op":"join","office":"o"}``,
``{"op":"update_tool_list"}``, ``{"op":"update_config"}``, ``{"op":"update_desktop"}`` (the
SDK's own ``emit_update_*`` helpers, which only emit while joined), ``{"op":"emit","event":E,
"data":D}``, ``{"op":"call","event":E,"data":D,"timeout":T}``, ``{"op":"tools"}``,
``{"op":"desktop"}``, ``{"op":"status"}``, ``{"op":"exit"}``, and
``{"op":"invoke","event":"client:get_config","data":D}`` which runs the SDK's handler for that
``client:*`` event locally (same code as over the wire) and reports what it would ack. EOF on stdin or SIGTERM
disconnects (no explicit leave) and exits.
"""

from __future__ import annotations

import _common  # noqa: I001  (must come first: reserves stdout for JSON lines)

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

from _common import emit, error_info

NOTIFY_EVENTS = (
    "notify:tool_call_cancel",
    "notify:enter_office",
    "notify:leave_office",
    "notify:update_config",
    "notify:update_tool_list",
    "notify:update_desktop",
)


def parse_args() -> argparse.Namespace:
    parser = _common.client_arguments(__doc__)
    parser.add_argument("--mcp-config", required=True, help="JSON, @file or file path")
    parser.add_argument("--confirm", choices=("approve", "deny", "none"), default="approve")
    parser.add_argument("--no-join", action="store_true", help="connect but do not join")
    parser.add_argument("--settings", help="0.4.x: its flag-scope settings.json (e.g. landingRoot for client:put_blob)")
    return _common.parse_arguments(parser)


def load_config(doc):  # noqa: ANN001, ANN201
    """Split a config document into (server dicts, input dicts)."""
    inputs = []
    if isinstance(doc, dict) and "servers" in doc:
        servers = doc["servers"]
        inputs = list(doc.get("inputs") or [])
        if isinstance(servers, dict):
            servers = [{"name": name, **cfg} for name, cfg in servers.items()]
    elif isinstance(doc, list):
        servers = doc
    else:
        servers = [doc]
    return list(servers), inputs


async def amain(args: argparse.Namespace) -> int:
    from pydantic import TypeAdapter

    from a2c_smcp.computer.computer import Computer
    from a2c_smcp.computer.mcp_clients.model import MCPServerConfig, MCPServerInput
    from a2c_smcp.computer.socketio.client import SMCPComputerClient

    server_dicts, input_dicts = load_config(_common.load_json_arg(args.mcp_config))
    servers = {TypeAdapter(MCPServerConfig).validate_python(d) for d in server_dicts}
    inputs = {TypeAdapter(MCPServerInput).validate_python(d) for d in input_dicts}

    def confirm(req_id: str, server: str, tool: str, params: dict) -> bool:
        emit({"event": "confirm", "req_id": req_id, "server": server, "tool": tool, "params": params, "answer": args.confirm})
        return args.confirm == "approve"

    computer = Computer(
        args.name,
        inputs=inputs,
        mcp_servers=servers,
        auto_connect=True,
        auto_reconnect=True,
        confirm_callback=None if args.confirm == "none" else confirm,
        **({"flag_settings_path": Path(args.settings)} if args.settings else {}),
    )
    await computer.boot_up()
    tools = await computer.aget_available_tools()
    emit({"event": "booted", "name": args.name, "tools": [t["name"] for t in tools], "servers": sorted(s.name for s in servers)})

    class TracingComputerClient(SMCPComputerClient):
        async def emit(self, event, data=None, namespace=None, callback=None):  # noqa: ANN001
            emit({"event": "send", "name": event, "data": data, "ack": callback is not None})
            await super().emit(event, data, namespace, callback)

        async def call(self, event, data=None, namespace=None, timeout=60):  # noqa: ANN001
            try:
                result = await super().call(event, data, namespace=namespace, timeout=timeout)
            except Exception as exc:
                emit({"event": "call_error", "name": event, **error_info(exc)})
                raise
            emit({"event": "ack", "name": event, "data": result})
            return result

        async def _traced(self, name, handler, data):  # noqa: ANN001
            emit({"event": "recv", "name": name, "data": data})
            started = time.monotonic()
            try:
                result = await handler(data)
            except BaseException as exc:
                emit({"event": "handler_error", "name": name, **error_info(exc)})
                raise
            emit({"event": "reply", "name": name, "data": result, "elapsed": round(time.monotonic() - started, 4)})
            return result

        async def on_tool_call(self, data):  # noqa: ANN001
            return await self._traced("client:tool_call", super().on_tool_call, data)

        async def on_get_tools(self, data):  # noqa: ANN001
            return await self._traced("client:get_tools", super().on_get_tools, data)

        async def on_get_desktop(self, data):  # noqa: ANN001
            return await self._traced("client:get_desktop", super().on_get_desktop, data)

        async def on_get_config(self, data):  # noqa: ANN001
            return await self._traced("client:get_config", super().on_get_config, data)

        async def on_get_resources(self, data):  # noqa: ANN001  (registered by 0.4.x only)
            return await self._traced("client:get_resources", super().on_get_resources, data)

        async def on_tool_call_cancel(self, data):  # noqa: ANN001  (registered by 0.4.x only)
            emit({"event": "notify", "name": "notify:tool_call_cancel", "data": data})
            return await super().on_tool_call_cancel(data)

    client = TracingComputerClient(computer=computer, namespace=args.namespace)
    for name in NOTIFY_EVENTS:
        if name in client.handlers.get(args.namespace, {}):
            continue  # the SDK's own handler, traced above

        async def on_notify(data=None, _name=name):  # noqa: ANN001
            emit({"event": "notify", "name": _name, "data": data})

        client.on(name, on_notify, namespace=args.namespace)

    auth, headers = _common.key_presentation(args.auth_via, args.api_key)
    connect_kwargs: dict = {"namespaces": [args.namespace]}
    if auth:
        connect_kwargs["auth"] = auth
    if headers:
        connect_kwargs["headers"] = headers
    if args.transports:
        connect_kwargs["transports"] = args.transports.split(",")

    exit_code = 0
    try:
        await client.connect(args.url, **connect_kwargs)
    except Exception as exc:
        emit({"event": "connect_failed", **error_info(exc)})
        sys.stderr.flush()
        os._exit(2)
    emit({"event": "connected", "sid": client.get_sid(args.namespace), "transport": client.transport()})

    async def join(office: str) -> dict:
        try:
            await client.join_office(office)
        except Exception as exc:
            emit({"event": "join_failed", "office": office, **error_info(exc)})
            return {"ok": False, **error_info(exc)}
        emit({"event": "joined", "office": office, "name": computer.name, "transport": client.transport()})
        return {"ok": True}

    if not args.no_join:
        await join(args.office)

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    loop.add_signal_handler(signal.SIGTERM, queue.put_nowait, None)
    loop.add_signal_handler(signal.SIGINT, queue.put_nowait, None)
    _common.start_stdin_watcher(
        lambda line: loop.call_soon_threadsafe(queue.put_nowait, line),
        lambda: loop.call_soon_threadsafe(queue.put_nowait, None),
    )

    while True:
        line = await queue.get()
        if line is None:
            break
        try:
            cmd = json.loads(line)
            op = cmd.get("op")
        except ValueError as exc:
            emit({"event": "result", "op": None, "ok": False, **error_info(exc)})
            continue
        if op == "exit":
            emit({"event": "result", "op": op, "ok": True})
            break
        try:
            if op == "join":
                out = await join(cmd.get("office", args.office))
            elif op == "leave":
                await client.leave_office(cmd.get("office") or client.office_id or args.office)
                out = {"ok": True}
            elif op == "update_tool_list":
                await client.emit_update_tool_list()
                out = {"ok": True, "joined": bool(client.office_id)}
            elif op == "update_config":
                await client.emit_update_config()
                out = {"ok": True, "joined": bool(client.office_id)}
            elif op == "update_desktop":
                await client.emit_refresh_desktop()
                out = {"ok": True, "joined": bool(client.office_id)}
            elif op == "emit":
                await client.emit(cmd["event"], cmd.get("data"))
                out = {"ok": True}
            elif op == "call":
                data = await client.call(cmd["event"], cmd.get("data"), namespace=args.namespace, timeout=cmd.get("timeout", 10))
                out = {"ok": True, "result": data}
            elif op == "invoke":
                # Run the SDK's own handler for a client:* event locally, as if it had
                # arrived over the wire (no server needed): shows the exact ack it would send.
                handlers = {
                    "client:tool_call": client.on_tool_call,
                    "client:get_tools": client.on_get_tools,
                    "client:get_desktop": client.on_get_desktop,
                    "client:get_config": client.on_get_config,
                    "client:get_resources": client.on_get_resources,
                }
                out = {"ok": True, "result": await handlers[cmd["event"]](cmd.get("data"))}
            elif op == "tools":
                out = {"ok": True, "result": await computer.aget_available_tools()}
            elif op == "desktop":
                out = {"ok": True, "result": await computer.get_desktop(size=cmd.get("size"), window_uri=cmd.get("window"))}
            elif op == "status":
                out = {
                    "ok": True,
                    "connected": client.connected,
                    "sid": client.get_sid(args.namespace),
                    "transport": client.transport(),
                    "office_id": client.office_id,
                }
            else:
                out = {"ok": False, "error": f"unknown op {op!r}"}
        except Exception as exc:
            out = {"ok": False, **error_info(exc)}
        emit({"event": "result", "op": op, **out})

    # Shutting down: a late SIGTERM must not kill us half way (asyncio would restore SIG_DFL).
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(sig)
        signal.signal(sig, signal.SIG_IGN)
    started = time.monotonic()
    try:
        await asyncio.wait_for(client.disconnect(), 10)
        emit({"event": "disconnected", "elapsed": round(time.monotonic() - started, 3)})
    except Exception as exc:  # pragma: no cover - diagnostics only
        emit({"event": "disconnect_error", **error_info(exc)})
        exit_code = 1
    # Computer.shutdown() of a2c-smcp 0.1.6 never returns once a stdio MCP server was
    # connected (BaseMCPClient.on_enter_disconnected waits for an event that the cancelled
    # keep-alive task never sets), so bound it; the MCP child gets EOF when we exit.
    started = time.monotonic()
    shutdown = asyncio.ensure_future(computer.shutdown())
    done, _ = await asyncio.wait({shutdown}, timeout=2)
    if done and shutdown.exception() is not None:  # pragma: no cover - diagnostics only
        emit({"event": "shutdown_error", **error_info(shutdown.exception())})
        exit_code = 1
    emit({"event": "shutdown", "completed": bool(done), "elapsed": round(time.monotonic() - started, 3)})
    emit({"event": "exit", "code": exit_code})
    # Leave without asyncio.run's task cleanup: the SDK's hung shutdown task may not cancel.
    sys.stderr.flush()
    os._exit(exit_code)


def main() -> int:
    return asyncio.run(amain(parse_args()))  # amain leaves through os._exit


if __name__ == "__main__":
    sys.exit(main())
