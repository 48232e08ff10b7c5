"""Run a Computer from a config in the official A2C-SMCP SDK's JSON format, unattended.

    python examples/computer_config/run_computer.py --url http://127.0.0.1:8000 \\
        --office web-office [--name laptop] [--config FILE] [--input ID=VALUE ...] [--api-key KEY]

Run it from the repository root (the default documents folder is relative to it), in the
virtualenv where smcp-sync is installed (the config starts `python`).

Nothing is ever prompted, so it runs as a service or in a container: the value of each
``${input:ID}`` comes from ``--input ID=VALUE``, else from the environment variable
``SMCP_INPUT_<ID>`` (upper case), else from the input's default. An input left without
a value, or a pickString value that is not one of its options, stops the script before
anything starts (exit 2). Runs until Ctrl-C or SIGTERM (exit 0).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from smcp_sync import BadRequestError, Computer, MCPServerInput, SMCPError
from smcp_sync.computer import InputError
from smcp_sync.computer import Inputs

DEFAULT_CONFIG = Path(__file__).with_name("mcp_servers.json")


def env_name(input_id: str) -> str:
    return f"SMCP_INPUT_{input_id.upper()}"


def value_from_env(item: MCPServerInput) -> str | None:
    """The Computer's input resolver: asked for each input without a --input value;
    None (unset or empty) lets the input's default apply."""
    return os.environ.get(env_name(item.id)) or None


def input_assignment(text: str) -> tuple[str, str]:
    input_id, sep, value = text.partition("=")
    if not sep or not input_id:
        raise argparse.ArgumentTypeError(f"expected ID=VALUE, got {text!r}")
    return input_id, value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the SMCP Server's URL")
    parser.add_argument("--office", required=True, help="the office to join")
    parser.add_argument("--name", default="laptop", help="this Computer's name in the office (default: laptop)")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="MCP servers and inputs (JSON)")
    parser.add_argument("--input", type=input_assignment, action="append", default=[], metavar="ID=VALUE")
    parser.add_argument("--api-key", default=os.environ.get("SMCP_API_KEY"), help="default: $SMCP_API_KEY")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        computer = Computer(args.name, config=args.config, inputs=Inputs(values=dict(args.input), resolver=value_from_env))
    except InputError as exc:
        input_id = exc.details.get("input", "ID")
        print(f"{exc.message}\n  set it with --input {input_id}=VALUE or ${env_name(input_id)}", file=sys.stderr)
        return 2
    except BadRequestError as exc:  # an unreadable or invalid config
        print(exc.message, file=sys.stderr)
        return 2

    # Ctrl-C and SIGTERM both stop it (also when started where SIGINT is ignored, as
    # background jobs of a shell are).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.default_int_handler)
    try:
        with computer:  # starts the MCP servers; closing stops them and their processes
            computer.connect(args.url, args.office, auth={"api_key": args.api_key} if args.api_key else None)
            tools = ", ".join(tool.name for tool in computer.tools())
            print(f"computer {args.name!r} joined office {args.office!r}; tools: {tools}", flush=True)
            threading.Event().wait()  # serve until Ctrl-C
    except KeyboardInterrupt:
        print("stopped", flush=True)
    except SMCPError as exc:  # refused: wrong key, name taken in the office, unreachable
        print(f"cannot join: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
