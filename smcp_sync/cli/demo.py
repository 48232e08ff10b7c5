"""`smcp-sync demo`: the whole protocol in one process, no configuration needed."""

from __future__ import annotations

import argparse

NOT_BUILT = (
    "smcp-sync demo: the walkthrough (Server + Computer + Agent in one process) is not built yet;\n"
    "what exists today is the wire contract (smcp_sync.protocol: events, errors, models, codec)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run Server, Computer and Agent in one process and walk through the protocol")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(NOT_BUILT)
    return 0
