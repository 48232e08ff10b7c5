"""`smcp-sync computer`: host MCP servers and serve their tools to an office until stopped.

    smcp-sync computer --config FILE --url URL --office OFFICE --name NAME
                       [--inputs FILE] [--input ID=VALUE ...] [--api-key KEY]

--config holds the official A2C-SMCP SDK's JSON: one MCP server config, a list of them,
or {"servers": [...], "inputs": [...]}; --inputs an input definition or a list of them.
A `${input:ID}` without a value (--input) is asked on the terminal when there is one
(hidden for password inputs); otherwise its default is used, or the command fails.
MCP servers that fail to start are retried in the background; the rest serve at once.
Runs until Ctrl-C (exit 130) or SIGTERM (exit 0); a dropped connection is re-made.
"""

from __future__ import annotations

import argparse
import getpass
import os
import signal
import select
import sys
from typing import Any

from ..computer import Computer, ServerState
from ..computer.config_file import load_config, load_inputs
from ..protocol.errors import BadRequestError, SMCPError
from ..protocol.models import MCPServerInput, PickStringInput, PromptStringInput
from .server import API_KEY_ENV


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "computer",
        help="host MCP servers and serve their tools to an office",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="MCP server configuration (JSON)")
    parser.add_argument("--url", required=True, help="the Server's URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--office", required=True, help="office (room) id to join")
    parser.add_argument("--name", required=True, help="this Computer's name in the office")
    parser.add_argument("--inputs", metavar="FILE", help="input definitions (JSON), if not in --config")
    parser.add_argument(
        "--input", action="append", default=[], metavar="ID=VALUE", help="value of an input (repeatable)"
    )
    parser.add_argument(
        "--api-key", default=os.environ.get(API_KEY_ENV), help=f"the Server's API key (default: ${API_KEY_ENV})"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for starting and joining (default: 30)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from . import EXIT_FAILURE, EXIT_OK, EXIT_USAGE  # here: the package imports this module

    if not args.timeout > 0:
        return _fail("--timeout must be > 0", EXIT_USAGE)
    try:
        values = dict(_assignment(text) for text in args.input)
        config = load_config(args.config)
        inputs = [*config.inputs, *(load_inputs(args.inputs) if args.inputs else ())]
        computer = Computer(
            args.name,
            config.servers,
            inputs=inputs,
            input_values=values,
            input_resolver=_ask_on_terminal if sys.stdin.isatty() else None,
        )
    except (BadRequestError, ValueError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    auth = {"api_key": args.api_key, "access_token": args.api_key} if args.api_key else None  # ours / official SDK
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        computer.start(args.timeout)
        computer.connect(args.url, args.office, auth=auth, timeout=args.timeout)
        print(_summary(computer, args), flush=True)
        _wait_for_signals()
    except _Terminated:
        return EXIT_OK
    except SMCPError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    finally:
        signal.signal(signal.SIGTERM, previous)
        computer.close()


class _Terminated(Exception):
    """SIGTERM, raised by its handler in the main thread."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated


def _wait_for_signals() -> None:
    """Return never; a signal handler raises (SIGTERM: _Terminated, SIGINT:
    KeyboardInterrupt). Why the wakeup fd: the OS may deliver the signal to any of our
    threads, and then a plain sleep or wait in the main thread is not interrupted; the
    interpreter writes to the wakeup fd whichever thread receives it."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd)
    try:
        while True:
            select.select([read_fd], [], [])
            os.read(read_fd, 512)  # the handler runs here, in the main thread
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)


def _summary(computer: Computer, args: argparse.Namespace) -> str:
    statuses = computer.server_statuses()
    down = [s.name for s in statuses if s.state not in (ServerState.RUNNING, ServerState.DISABLED)]
    note = f"; not running yet: {', '.join(down)}" if down else ""
    return (
        f"computer {computer.name!r} joined office {args.office!r} at {args.url} with {len(computer.tools())} tools "
        f"from {len(statuses)} MCP servers{note}"
    )


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--input expects ID=VALUE, got {text!r}")
    return name, value


def _ask_on_terminal(item: MCPServerInput) -> Any:
    """Prompt for a promptString / pickString input; None keeps the default rules."""
    if isinstance(item, PromptStringInput):
        if item.password:
            return getpass.getpass(f"{item.description} ({item.id}): ") or None
        shown = f" [{item.default}]" if item.default is not None else ""
        return input(f"{item.description} ({item.id}){shown}: ") or None
    if isinstance(item, PickStringInput) and item.options:
        for number, option in enumerate(item.options, 1):
            print(f"  {number}. {option}")
        answer = input(f"{item.description} ({item.id}) [1-{len(item.options)}]: ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(item.options):
            return item.options[int(answer) - 1]
        return answer or None
    return None


def _fail(message: str, code: int) -> int:
    print(f"smcp-sync computer: {message}", file=sys.stderr)
    return code
