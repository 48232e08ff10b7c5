"""The `smcp-sync` command line: one sub-command module per role (server, computer,
agent, demo), each exposing `register(subparsers)` that sets `func` on its parser.

Exit codes: 0 success, 1 runtime failure (unreachable server, refused join, protocol
error), 2 bad arguments or configuration, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from .._version import __version__
from . import agent, computer, demo, server

COMMANDS = (demo, server, computer, agent)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smcp-sync", description="A2C-SMCP in synchronous Python.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level of the smcp_sync logger (default: WARNING)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
