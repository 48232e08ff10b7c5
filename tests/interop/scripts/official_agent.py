"""Drive the official SDK's SYNC Agent (a2c-smcp 0.4.x or 0.1.x) through a list of steps; print JSON lines.

Usage (with an official venv's python)::

    python official_agent.py --url http://127.0.0.1:PORT --office OFFICE --name NAME \
        [--api-key test-key] [--auth-via sdk|auth|header|both|none] [--transports ...] \
        [--no-join] [--join-mode call|emit] [--linger SECONDS] [--claim-version X.Y.Z] STEPS

``STEPS`` is a JSON list (inline, ``@file`` or a path), executed in order, e.g.::

    [{"op":"wait_notify","name":"notify:enter_office","match":{"computer":"c1"}},
     {"op":"list_room"},
     {"op":"get_tools","computer":"c1"},
     {"op":"tool_call","computer":"c1","tool":"echo","params":{"text":"hi"},"timeout":10},
     {"op":"get_desktop","computer":"c1"}]

What runs: ``a2c_smcp.agent.SMCPAgentClient`` (a ``socketio.Client``) with
``DefaultAgentAuthProvider(agent_id=NAME, office_id=OFFICE, api_key=..., auth_data=...)``,
connected by the SDK's ``connect_to_server(url)`` (-> ``connect(url, auth=..., headers=...,
namespaces=["/smcp"])``; 0.4.x adds the ``a2c_version`` query itself). ``--auth-via sdk`` is
the SDK's documented usage, ``api_key=`` (0.4.x: Socket.IO auth dict ``token``; 0.1.x: HTTP
header ``access_token``); ``auth`` (default) puts ``{"access_token": key}`` in the auth dict
(``auth_data=``), ``header`` in the HTTP header ``access_token`` (``extra_headers=``), ``both``
does both.

Ops (each prints ``{"event":"result","index":i,"op":..,"ok":..,...}``):

* ``join`` [office, mode, timeout]: mode ``call`` (default) sends ``server:join_office`` with an
  ack and reports it; mode ``emit`` uses the SDK's ``join_office()``, which emits WITHOUT an
  ack (fire and forget). ``leave`` [office, mode] likewise (SDK: ``leave_office()``).
  Unless ``--no-join``, a ``join`` (``--join-mode``) runs before the steps.
* ``list_room`` [office]: ``server:list_room`` exactly as the SDK builds it, full response;
  ``get_computers`` [office]: the SDK's ``get_computers_in_office()`` (computers only).
* ``get_tools`` computer: SDK ``get_tools_from_computer()``.
* ``tool_call`` computer tool params [timeout=10]: SDK ``emit_tool_call()``; ``result`` is the
  SDK's ``CallToolResult`` (dumped), ``raw`` the ack dict as received.
* ``get_desktop`` computer [size, window]: SDK ``get_desktop_from_computer()``.
* ``get_config`` computer: 0.4.x: SDK ``get_config_from_computer()``; 0.1.x: raw
  ``client:get_config`` call (that SDK agent has no method for it).
* ``get_resources`` computer mcp_server [cursor]: SDK ``get_resources()`` (0.4.x only).
* ``get_blob`` computer handle (0.4.x): the SDK's ``drain_blob_sync`` over its ``get_blob`` calls;
  ``size`` and ``sha256`` of the bytes it returns. ``put_blob`` computer size [seed=0]
  [name_hint] (0.4.x): SDK ``put_blob()`` of ``random.Random(seed).randbytes(size)``; ``result``
  its answer, ``sha256`` of the bytes sent.
* ``get_skills`` computer (0.4.x): SDK ``get_skills()``; ``get_skill`` computer name [rel_path]
  (0.4.x): SDK ``get_skill()`` (it drains a text file's blob handle into ``body`` itself);
  for a binary file's handle ``size`` and ``sha256`` of the bytes ``drain_blob_sync`` returns.
* ``cancel`` [req_id]: emits ``server:tool_call_cancel`` {agent, req_id} like the SDK does;
  ``req_id`` defaults to ``"@last"``, the req_id of the last ``client:tool_call`` sent.
* ``spawn`` steps [label]: run ``steps`` in a background thread (their results are indexed
  ``"<label>.<i>"``, label defaults to ``spawn``); ``join_spawned`` [timeout] waits for them.
* ``call`` event data [timeout] / ``emit`` event data: raw, through the SDK client.
* ``sleep`` seconds; ``wait_notify`` [name] [match] [timeout=10]: wait for the first
  ``notify:*`` received after the one the previous ``wait_notify`` returned (from the start
  for the first) whose name is ``name`` and whose data contains ``match``.

Other lines: ``connected`` (sid, transport), ``send`` (every emit: name, data, ack wanted),
``ack`` / ``call_error`` (every acked call), ``notify`` (every ``notify:*`` received, before the
SDK's own handler runs), ``sdk_callback`` (the SDK's AgentEventHandler callbacks, e.g.
``on_tools_received`` after its automatic ``get_tools`` on ``notify:enter_office``), ``exit``.
``--claim-version`` (0.4.x) makes it announce another protocol version than its SDK's
(a refusal prints ``connect_failed`` with the SDK's ``ProtocolVersionError`` fields).
After the steps it waits ``--linger`` seconds (to collect notifications), disconnects and exits 0
(2 when the connection fails).
"""

from __future__ import annotations

import _common  # noqa: I001  (must come first: reserves stdout for JSON lines)

import argparse
import hashlib
import os
import random
import sys
import threading
import time
import uuid

from _common import emit, error_info


def parse_args() -> argparse.Namespace:
    parser = _common.client_arguments(__doc__)
    parser.add_argument("--no-join", action="store_true")
    parser.add_argument("--join-mode", choices=("call", "emit"), default="call")
    parser.add_argument("--linger", type=float, default=0.0, help="seconds to wait after the last step")
    parser.add_argument("--claim-version", default=None, help="0.4.x: the a2c_version to announce")
    parser.add_argument("steps", nargs="?", default="[]", help="JSON list of steps (inline, @file or path)")
    return _common.parse_arguments(parser)


def subset(match: dict, data) -> bool:  # noqa: ANN001
    return isinstance(data, dict) and all(data.get(k) == v for k, v in match.items())


def main() -> int:
    args = parse_args()
    steps = _common.load_json_arg(args.steps)

    from a2c_smcp.agent import DefaultAgentAuthProvider, SMCPAgentClient
    from a2c_smcp.smcp import (
        CANCEL_TOOL_CALL_EVENT,
        GET_CONFIG_EVENT,
        JOIN_OFFICE_EVENT,
        LEAVE_OFFICE_EVENT,
        LIST_ROOM_EVENT,
    )

    notifications: list[tuple[str, object]] = []
    consumed = [0]
    cond = threading.Condition()
    local = threading.local()

    def record_notify(name: str, data) -> None:  # noqa: ANN001
        emit({"event": "notify", "name": name, "data": data})
        with cond:
            notifications.append((name, data))
            cond.notify_all()

    class Printer:
        """The SDK's AgentEventHandler protocol: report each callback."""

        def on_computer_enter_office(self, data, client) -> None:  # noqa: ANN001
            emit({"event": "sdk_callback", "name": "on_computer_enter_office", "data": data})

        def on_computer_leave_office(self, data, client) -> None:  # noqa: ANN001
            emit({"event": "sdk_callback", "name": "on_computer_leave_office", "data": data})

        def on_computer_update_config(self, data, client) -> None:  # noqa: ANN001
            emit({"event": "sdk_callback", "name": "on_computer_update_config", "data": data})

        def on_tools_received(self, computer, tools, client) -> None:  # noqa: ANN001
            emit({"event": "sdk_callback", "name": "on_tools_received", "computer": computer, "tools": [t.get("name") for t in tools]})

    last_tool_call_req_id = [None]
    spawned: list[threading.Thread] = []

    class TracingAgent(SMCPAgentClient):
        def emit(self, event, data=None, namespace=None, callback=None):  # noqa: ANN001
            emit({"event": "send", "name": event, "data": data, "ack": callback is not None})
            if event == "client:tool_call" and isinstance(data, dict):
                last_tool_call_req_id[0] = data.get("req_id")
            return super().emit(event, data, namespace, callback)

        def call(self, event, data=None, namespace=None, timeout=60):  # noqa: ANN001
            local.raw = None
            try:
                result = super().call(event, data, namespace=namespace, timeout=timeout)
            except Exception as exc:
                emit({"event": "call_error", "name": event, **error_info(exc)})
                raise
            local.raw = result
            emit({"event": "ack", "name": event, "data": result})
            return result

        # The notify handlers the SDK registers: report the raw payload, then let the SDK run.
        def _on_computer_enter_office(self, data):  # noqa: ANN001
            record_notify("notify:enter_office", data)
            return super()._on_computer_enter_office(data)

        def _on_computer_leave_office(self, data):  # noqa: ANN001
            record_notify("notify:leave_office", data)
            return super()._on_computer_leave_office(data)

        def _on_computer_update_config(self, data):  # noqa: ANN001
            record_notify("notify:update_config", data)
            return super()._on_computer_update_config(data)

        def _on_desktop_updated(self, data):  # noqa: ANN001
            record_notify("notify:update_desktop", data)
            return super()._on_desktop_updated(data)

        def _on_computer_update_tool_list(self, data):  # noqa: ANN001  (registered by 0.4.x only)
            record_notify("notify:update_tool_list", data)
            return super()._on_computer_update_tool_list(data)

        def _on_skills_updated(self, data):  # noqa: ANN001  (registered by 0.4.x only)
            record_notify("notify:update_skills", data)
            return super()._on_skills_updated(data)

    if args.auth_via == "sdk":
        credentials = {"api_key": args.api_key}
    else:
        auth_data, headers = _common.key_presentation(args.auth_via, args.api_key)
        credentials = {"auth_data": auth_data, "extra_headers": headers}
    auth = DefaultAgentAuthProvider(agent_id=args.name, office_id=args.office, **credentials)
    agent = TracingAgent(auth_provider=auth, event_handler=Printer(), namespace=args.namespace)
    # Events the SDK's sync agent registers no handler for: observe them anyway.
    for name in ("notify:update_tool_list", "notify:tool_call_cancel"):
        if name not in agent.handlers.get(args.namespace, {}):
            agent.on(name, lambda data=None, _n=name: record_notify(_n, data), namespace=args.namespace)

    if args.claim_version:
        import a2c_smcp.agent.sync_client as sync_client

        sync_client.PROTOCOL_VERSION = args.claim_version  # what connect_to_server announces

    connect_kwargs = {}
    if args.transports:
        connect_kwargs["transports"] = args.transports.split(",")
    try:
        agent.connect_to_server(args.url, **connect_kwargs)
    except Exception as exc:
        versions = {k: getattr(exc, k) for k in ("client_version", "server_version") if hasattr(exc, k)}
        emit({"event": "connect_failed", **error_info(exc), **versions})
        os._exit(2)
    emit({"event": "connected", "sid": agent.get_sid(args.namespace), "transport": agent.transport()})
    ns = args.namespace

    def run_step(step: dict) -> dict:
        op = step.get("op")
        office = step.get("office", args.office)
        timeout = step.get("timeout", 10)
        if op in ("join", "leave"):
            mode = step.get("mode", args.join_mode)
            if mode == "emit":
                if op == "join":
                    agent.join_office(office, args.name, namespace=ns)
                else:
                    agent.leave_office(office, namespace=ns)
                return {"ok": True, "mode": "emit"}
            payload = (
                {"office_id": office, "role": "agent", "name": step.get("name", args.name)}
                if op == "join"
                else {"office_id": office}
            )
            ack = agent.call(JOIN_OFFICE_EVENT if op == "join" else LEAVE_OFFICE_EVENT, payload, namespace=ns, timeout=timeout)
            ok = bool(ack[0]) if isinstance(ack, (list, tuple)) and ack else bool(ack)
            return {"ok": ok, "mode": "call", "ack": ack}
        if op == "list_room":
            req = {"agent": args.name, "req_id": f"list_computers_{args.name}_{office}", "office_id": office}
            return {"ok": True, "result": agent.call(LIST_ROOM_EVENT, req, namespace=ns, timeout=timeout)}
        if op == "get_computers":
            return {"ok": True, "result": agent.get_computers_in_office(office, timeout=timeout)}
        if op == "get_tools":
            return {"ok": True, "result": agent.get_tools_from_computer(step["computer"], timeout=timeout)}
        if op == "tool_call":
            result = agent.emit_tool_call(step["computer"], step["tool"], step.get("params", {}), timeout)
            return {
                "ok": True,
                "result": result.model_dump(mode="json", by_alias=True),
                "raw": getattr(local, "raw", None),
            }
        if op == "get_desktop":
            ret = agent.get_desktop_from_computer(
                step["computer"], size=step.get("size"), window=step.get("window"), timeout=timeout
            )
            return {"ok": True, "result": ret}
        if op == "get_config":
            if hasattr(agent, "get_config_from_computer"):
                return {"ok": True, "result": agent.get_config_from_computer(step["computer"], timeout=timeout)}
            req = {"agent": args.name, "req_id": uuid.uuid4().hex, "computer": step["computer"]}
            return {"ok": True, "result": agent.call(GET_CONFIG_EVENT, req, namespace=ns, timeout=timeout)}
        if op == "get_resources":
            ret = agent.get_resources(step["computer"], step["mcp_server"], cursor=step.get("cursor"), timeout=timeout)
            return {"ok": True, "result": ret}
        if op == "get_blob":
            from a2c_smcp.utils.blob import drain_blob_sync

            data, _ = drain_blob_sync(agent._make_blob_call(), step["computer"], step["handle"])
            return {"ok": True, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if op == "put_blob":
            data = random.Random(step.get("seed", 0)).randbytes(step["size"])
            ret = agent.put_blob(step["computer"], data, name_hint=step.get("name_hint"), timeout=timeout)
            result = {key: getattr(ret, key) for key in ("landing_path", "total_size", "sha256")}
            return {"ok": True, "result": result, "sha256": hashlib.sha256(data).hexdigest()}
        if op == "get_skills":
            return {"ok": True, "result": agent.get_skills(step["computer"], timeout=timeout)}
        if op == "get_skill":
            ret = dict(agent.get_skill(step["computer"], step["name"], step.get("rel_path"), timeout=timeout))
            if "blob_handle" in ret:
                from a2c_smcp.utils.blob import drain_blob_sync

                data, _ = drain_blob_sync(agent._make_blob_call(), step["computer"], ret["blob_handle"])
                return {"ok": True, "result": ret, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            return {"ok": True, "result": ret}
        if op == "cancel":
            req_id = step.get("req_id", "@last")
            if req_id == "@last":
                req_id = last_tool_call_req_id[0]
            agent.emit(CANCEL_TOOL_CALL_EVENT, {"agent": args.name, "req_id": req_id}, namespace=ns)
            return {"ok": True, "req_id": req_id}
        if op == "spawn":
            # Run ``steps`` in a background thread (e.g. a long tool_call to cancel).
            thread = threading.Thread(target=run_steps, args=(step.get("steps", []), f"{step.get('label', 'spawn')}."), daemon=True)
            spawned.append(thread)
            thread.start()
            return {"ok": True}
        if op == "join_spawned":
            for thread in spawned:
                thread.join(float(timeout))
            return {"ok": not any(t.is_alive() for t in spawned)}
        if op == "call":
            return {"ok": True, "result": agent.call(step["event"], step.get("data"), namespace=ns, timeout=timeout)}
        if op == "emit":
            agent.emit(step["event"], step.get("data"), namespace=ns)
            return {"ok": True}
        if op == "sleep":
            time.sleep(float(step.get("seconds", 0.5)))
            return {"ok": True}
        if op == "wait_notify":
            name, match = step.get("name"), step.get("match") or {}
            deadline = time.monotonic() + float(timeout)
            with cond:
                while True:
                    for i in range(consumed[0], len(notifications)):
                        n_name, n_data = notifications[i]
                        if (name is None or n_name == name) and subset(match, n_data):
                            consumed[0] = i + 1
                            return {"ok": True, "name": n_name, "data": n_data}
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return {"ok": False, "error": f"no {name} matching {match} within {timeout}s"}
                    cond.wait(remaining)
        return {"ok": False, "error": f"unknown op {op!r}"}

    def run_steps(items: list, prefix: str = "") -> None:
        for index, step in enumerate(items):
            started = time.monotonic()
            try:
                out = run_step(step)
            except Exception as exc:
                out = {"ok": False, **error_info(exc)}
            label = f"{prefix}{index}" if prefix else index
            emit({"event": "result", "index": label, "op": step.get("op"), "step": step, **out, "elapsed": round(time.monotonic() - started, 4)})

    run_steps(([] if args.no_join else [{"op": "join"}]) + list(steps))

    if args.linger > 0:
        time.sleep(args.linger)
    try:
        agent.disconnect()
    except Exception as exc:  # pragma: no cover - diagnostics only
        emit({"event": "disconnect_error", **error_info(exc)})
    emit({"event": "exit", "code": 0})
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
