"""Drive the official A2C-SMCP SDK's sync Agent (a2c-smcp 0.1.6) through the benchmark loop.

Run by the official SDK venv's python (it pins mcp<2, so it never shares our
interpreter); `paths.official` starts it. It imports `loadgen` from this directory, so
the official stack is timed by exactly the loop that times ours.

    python official_driver.py --url URL --office O --name A --computer C [--text ping]

It connects `SMCPAgentClient` (websocket, key in the auth dict as `access_token`, with
`agent_id` equal to the joined name, see tests/interop/WIRE_NOTES.md §1, §6), joins with
an acked `server:join_office` (the SDK's own `join_office` emits on the wrong namespace),
prints ``{"event": "ready"}``, then for each stdin line ``{"plan": {...}}`` runs
`loadgen.measure` over `emit_tool_call(C, "echo", {"text": TEXT})` and prints
``{"event": "result", "outcome": {...}}``. EOF on stdin disconnects and exits.

The SDK documents its client as not thread-safe; its calls go through python-socketio's
`Client.call`, which is, so the concurrent levels share one client (one Agent per office).
The SDK logs to stdout, so the interop scripts' `_common` reserves the real stdout for the
JSON lines first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import loadgen  # this directory is sys.path[0]

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests" / "interop" / "scripts"))
import _common  # noqa: E402  (before the SDK: reserves stdout)

NAMESPACE = "/smcp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--office", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--computer", required=True)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--text", default="ping")
    parser.add_argument("--call-timeout", type=int, default=10, help="seconds, the request's timeout")
    args = parser.parse_args()
    _common.setup_stdout("warning")

    from a2c_smcp.agent import DefaultAgentAuthProvider, SMCPAgentClient

    auth = DefaultAgentAuthProvider(agent_id=args.name, office_id=args.office, auth_data={"access_token": args.api_key})
    agent = SMCPAgentClient(auth_provider=auth, namespace=NAMESPACE, handle_sigint=False)
    agent.connect_to_server(args.url, transports=["websocket"], wait_timeout=10)
    try:
        joined = agent.call(
            "server:join_office",
            {"office_id": args.office, "role": "agent", "name": args.name},
            namespace=NAMESPACE,
            timeout=10,
        )
        if not (isinstance(joined, (list, tuple)) and joined and joined[0]):
            raise RuntimeError(f"join refused: {joined!r}")

        def echo() -> None:
            result = agent.emit_tool_call(args.computer, "echo", {"text": args.text}, args.call_timeout)
            text = result.content[0].text if result.content else None
            if result.isError or text != args.text:
                raise RuntimeError(f"unexpected result: error={result.isError} text={text!r}")

        _common.emit({"event": "ready", "pid": os.getpid()})
        for line in sys.stdin:
            plan = loadgen.LoadPlan.from_dict(json.loads(line)["plan"])
            _common.emit({"event": "result", "outcome": loadgen.measure(echo, plan)})
    finally:
        agent.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
