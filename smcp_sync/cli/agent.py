"""`smcp-sync agent`: one Agent request from the shell, for scripts and quick inspection.

    smcp-sync agent --url URL --office OFFICE [--name NAME] [--api-key KEY] [--json] ACTION
        tools COMPUTER                      the Computer's tools
        call COMPUTER TOOL [PARAMS_JSON]    call a tool (exit 1 when the tool reports an error)
        desktop COMPUTER [--size N] [--window URI]
        room                                every session in the office

The Agent joins the office for the duration of the command, so it is refused (4101)
while another Agent is in that office. `--json` prints the wire form of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..agent import Agent
from ..protocol.codec import to_wire
from ..protocol.conventions import DEFAULT_REQUEST_TIMEOUT
from ..protocol.errors import SMCPError
from ..protocol.models import CallToolResult
from .server import API_KEY_ENV

DEFAULT_NAME = "smcp-sync-cli"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agent",
        help="act as an Agent once: list tools, call a tool, show a desktop or the office",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", required=True, help="the Server's URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--office", required=True, help="office (room) id to join")
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"this Agent's name (default: {DEFAULT_NAME})")
    parser.add_argument("--api-key", default=os.environ.get(API_KEY_ENV), help=f"the Server's API key (default: ${API_KEY_ENV})")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT,
        help=f"seconds for each step; for `call`, the tool's timeout (default: {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (its wire form)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("tools", help="list a Computer's tools").add_argument("computer")
    call = actions.add_parser("call", help="call a tool")
    call.add_argument("computer")
    call.add_argument("tool")
    call.add_argument("params", nargs="?", default="{}", help="the tool's arguments as a JSON object (default: {})")
    desktop = actions.add_parser("desktop", help="show a Computer's desktop")
    desktop.add_argument("computer")
    desktop.add_argument("--size", type=int, help="at most this many windows")
    desktop.add_argument("--window", help="only this window:// URI")
    actions.add_parser("room", help="list the sessions in the office")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from . import EXIT_FAILURE, EXIT_OK, EXIT_USAGE  # here: the package imports this module

    try:
        params = json.loads(args.params) if args.action == "call" else None
    except ValueError as exc:
        return _fail(f"PARAMS is not valid JSON: {exc}", EXIT_USAGE)
    if params is not None and not isinstance(params, dict):
        return _fail("PARAMS must be a JSON object, e.g. '{\"text\": \"hi\"}'", EXIT_USAGE)
    if not args.timeout > 0:
        return _fail("--timeout must be > 0", EXIT_USAGE)

    auth = {"api_key": args.api_key, "access_token": args.api_key} if args.api_key else None  # ours / official SDK
    try:
        with Agent(args.name, auth=auth) as agent:
            agent.connect(args.url, timeout=args.timeout)
            agent.join_office(args.office, timeout=args.timeout)
            result = _act(agent, args, params)
    except SMCPError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    print(json.dumps(to_wire(result), ensure_ascii=False, indent=2) if args.json else _human(args.action, result))
    if isinstance(result, CallToolResult) and result.is_error:
        return EXIT_FAILURE
    return EXIT_OK


def _act(agent: Agent, args: argparse.Namespace, params: dict | None) -> Any:
    if args.action == "tools":
        return agent.get_tools(args.computer, timeout=args.timeout)
    if args.action == "call":
        return agent.call_tool(args.computer, args.tool, params, timeout=args.timeout)
    if args.action == "desktop":
        return agent.get_desktop(args.computer, desktop_size=args.size, window=args.window, timeout=args.timeout)
    return agent.list_room(timeout=args.timeout)


def _human(action: str, result: Any) -> str:
    if action == "tools":
        return "\n".join(f"{tool.name}\t{_first_line(tool.description)}" for tool in result)
    if action == "room":
        return "\n".join(f"{session.role}\t{session.name}\t{session.sid}" for session in result)
    if action == "desktop":
        return "\n\n".join(result)
    shown = [result.text] if result.text else []
    shown += [json.dumps(to_wire(block), ensure_ascii=False) for block in result.content if block.type != "text"]
    if result.structured_content is not None and not result.text:
        shown.append(json.dumps(result.structured_content, ensure_ascii=False))
    prefix = f"tool error [{result.error_code}]: " if result.is_error else ""
    return prefix + "\n".join(shown)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _fail(message: str, code: int) -> int:
    print(f"smcp-sync agent: {message}", file=sys.stderr)
    return code
