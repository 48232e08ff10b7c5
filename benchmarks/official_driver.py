"""Drive the official A2C-SMCP SDK's sync Agent (a2c-smcp 0.1.6 or 0.4.x) through the benchmark loop.

Run by the official SDK venv's python (it pins mcp<2, so it never shares our
interpreter); `paths.official` starts it. It imports `loadgen` from this directory, so
the official stack is timed by exactly the loop that times ours.

    python official_driver.py --url URL --office O --name A --computer C [--tool echo]
        [--auth-via auth|sdk] [--text ping]

It connects `SMCPAgentClient` (websocket; the key in the auth dict as ``--auth-via`` says,
see the interop scripts' `_common`; `agent_id` equal to the joined name, see
tests/interop/WIRE_NOTES.md §1, §6; 0.4.x adds its ``a2c_version`` and opens with polling
before the upgrade, whatever the transports asked), joins with an acked
`server:join_office` (0.1.6's own `join_office` emits on the wrong namespace), prints
``{"event": "ready"}``, then for each stdin line ``{"plan": {...}}`` runs `loadgen.measure`
over `emit_tool_call(C, TOOL, {"text": TEXT})` (0.4.x names the tool with its BundleID,
``echo__echo``) and prints ``{"event": "result", "outcome": {...}}``. EOF on stdin
disconnects and exits.

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
    parser.add_argument("--tool", default="echo", help="the echo tool's name at the Computer")
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--auth-via", choices=("auth", "sdk"), default="auth", help="as in the interop scripts")
    parser.add_argument("--text", default="ping")
    parser.add_argument("--call-timeout", type=int, default=10, help="seconds, the request's timeout")
    args = parser.parse_args()
    _common.setup_stdout("warning")

    from a2c_smcp.agent import DefaultAgentAuthProvider, SMCPAgentClient

    auth_data, headers = _common.key_presentation(args.auth_via, args.api_key)
    auth = DefaultAgentAuthProvider(
        agent_id=args.name, office_id=args.office, auth_data=auth_data, extra_headers=headers
    )
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
            result = agent.emit_tool_call(args.computer, args.tool, {"text": args.text}, args.call_timeout)
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
