"""Run the official SDK's Computer (a2c-smcp 0.1.6 or 0.4.x) joined to an office, untraced.

Run by the official SDK venv's python. The interop harness's `official_computer.py`
writes two JSON lines per request it handles; in a throughput run that costs the official
stack (and the reader on this 2-core machine) CPU our stack does not pay, so the
benchmark boots the same objects the same way (`Computer.boot_up`, `SMCPComputerClient`
presenting the key as ``--auth-via`` says, see the interop scripts' `_common`; 0.4.x adds
its ``a2c_version`` itself; an acked join) without tracing.

    python official_computer.py --url URL --office O --name C [--auth-via auth|sdk] --mcp-config JSON

Prints ``{"event": "ready", ...}`` once joined; EOF on stdin disconnects and exits.
The SDK's `Computer.shutdown()` never returns once a stdio MCP server was connected
(tests/interop/WIRE_NOTES.md §4.6), so it is bounded and the process leaves with
`os._exit` (the MCP child gets EOF).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests" / "interop" / "scripts"))
import _common  # noqa: E402


async def amain(args: argparse.Namespace) -> None:
    from a2c_smcp.computer.computer import Computer
    from a2c_smcp.computer.mcp_clients.model import MCPServerConfig
    from a2c_smcp.computer.socketio.client import SMCPComputerClient
    from pydantic import TypeAdapter

    config = TypeAdapter(MCPServerConfig).validate_python(json.loads(args.mcp_config))
    computer = Computer(args.name, mcp_servers={config}, auto_connect=True, auto_reconnect=False)
    await computer.boot_up()
    client = SMCPComputerClient(computer=computer, namespace="/smcp")
    auth, headers = _common.key_presentation(args.auth_via, args.api_key)
    await client.connect(args.url, auth=auth, headers=headers, namespaces=["/smcp"])
    await client.join_office(args.office)
    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)

    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await asyncio.wait_for(client.disconnect(), 10)
    await asyncio.wait({asyncio.ensure_future(computer.shutdown())}, timeout=2)
    sys.stdout.flush()
    os._exit(0)  # not through asyncio.run's cleanup: the hung shutdown task may not cancel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--office", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--auth-via", choices=("auth", "sdk"), default="auth", help="as in the interop scripts")
    parser.add_argument("--mcp-config", required=True, help="one MCP server config (JSON, the SDK's format)")
    args = parser.parse_args()
    try:
        asyncio.run(amain(args))
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    main()
