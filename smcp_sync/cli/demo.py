"""`smcp-sync demo`: the whole protocol in one process, no configuration needed.

    smcp-sync demo [--documents DIR] [--serve] [--port PORT] [--office OFFICE]
                   [--timeout SECONDS] [--json]

Starts a Server on a free local port, a Computer hosting the bundled example MCP
servers (tools, documents, windows) and an Agent in one office, then walks through the
protocol: the office, the tools, tool calls, the desktop, the Finder catalogue, a
document read from Level 1 to Level 3 (a page as Markdown), and the update
notification that follows a new file. Everything stops when it is done.

The documents are a temporary copy of the bundled samples, or --documents DIR (which
the demo only reads: the update step is skipped). With --serve, the demo's Agent leaves
after the walkthrough and the Server and Computer keep running until Ctrl-C or SIGTERM,
so that `smcp-sync agent` (printed) can use them.

Exit codes: 0 every step answered, 1 a step or the start failed, 2 bad arguments,
130 interrupted (Ctrl-C); with --serve, SIGTERM ends it with 0.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from ..demo import DEFAULT_OFFICE
from ..protocol.errors import SMCPError
from .exit_codes import EXIT_FAILURE, EXIT_OK
from .options import add_json, add_timeout, fail, port_number, port_problem
from .signals import Terminated, sigterm_raises, wait_for_signals
from .waiting import terminal, waiting

HOST = "127.0.0.1"  # the demo Server has no API key: never reachable from elsewhere
DEFAULT_TIMEOUT = 30.0


def documents_folder(text: str) -> Path:
    """An argparse type: an existing folder, as an absolute path."""
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return path.resolve()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run Server, Computer and Agent in one process and walk through the protocol",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--documents", type=documents_folder, metavar="DIR", help="serve this folder (default: the bundled samples)"
    )
    parser.add_argument(
        "--serve", action="store_true", help="keep the Server and Computer running after the walkthrough"
    )
    parser.add_argument(
        "--port", type=port_number, default=0, help="the Server's port on 127.0.0.1 (default: a free one)"
    )
    parser.add_argument("--office", default=DEFAULT_OFFICE, help=f"office (room) id (default: {DEFAULT_OFFICE})")
    add_timeout(parser, DEFAULT_TIMEOUT, "seconds for each start-up step and each request")
    add_json(parser, "print one JSON object per step instead of text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:  # here: the other commands need no MCP SDK (~1 s); and the demo's Server the `server` extra
        from ..demo.display import JsonDisplay, TextDisplay
        from ..demo.stage import DemoStage, StageSettings
        from ..demo.steps import Walkthrough
    except ImportError as exc:
        return fail("demo", str(exc), EXIT_FAILURE)

    problem = port_problem(HOST, args.port)
    if problem:
        return fail("demo", problem, EXIT_FAILURE)
    display = JsonDisplay(sys.stdout) if args.json else TextDisplay(sys.stdout)
    settings = StageSettings(documents=args.documents, office=args.office, port=args.port, timeout=args.timeout)
    try:
        with sigterm_raises(), contextlib.closing(DemoStage(settings)) as stage:
            with waiting("starting the Server, the Computer and its MCP servers", terminal(sys.stderr, args.json)):
                stage.open()
            display.start(stage.url, stage.office, str(stage.documents))
            walkthrough, failed = Walkthrough(stage, args.timeout), []
            for number, step in enumerate(walkthrough.steps(), 1):
                display.step(number, len(walkthrough), step)
                if step.error is not None:
                    failed.append(step.key)
            display.finish(failed)
            if args.serve:
                stage.release_agent()
                display.serving(stage.url, stage.office, stage.computer_name)
                wait_for_signals()
    except Terminated:
        return EXIT_OK
    except SMCPError as exc:
        return fail("demo", str(exc), EXIT_FAILURE)
    return EXIT_FAILURE if failed else EXIT_OK
