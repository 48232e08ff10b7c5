"""The `smcp-sync` command line: one sub-command module per role (server, computer,
agent, demo), one for authorizing an MCP server (authorize) and one for the Agent relay
(relay: `agent-relay`), each exposing
`register(subparsers)` that sets `func` on its parser.

Exit codes: 0 success, 1 runtime failure (unreachable server, refused connection or
join, protocol error, failed tool call), 2 bad arguments or configuration, 130
interrupted. Every failure is one line on stderr, ``smcp-sync COMMAND: message``;
tracebacks only in the log, at ``--log-level DEBUG``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Iterator, NoReturn, Sequence

from .._version import __version__
from ..protocol.redaction import redact_text
from . import agent, authorize, computer, demo, relay, server
from .exit_codes import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

COMMANDS = (demo, server, computer, authorize, agent, relay)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LOG_LEVEL = "WARNING"

logger = logging.getLogger(__name__)


class CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the usage is one --help away);
    sub-command parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(
        prog="smcp-sync",
        description="A2C-SMCP in synchronous Python. Try: smcp-sync demo",
        epilog="exit codes: 0 ok, 1 runtime failure (unreachable server, refused connection or join, protocol "
        "error, failed tool call), 2 bad arguments or configuration, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_log_level(parser, DEFAULT_LOG_LEVEL)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    for command in subparsers.choices.values():  # also accepted after the command name
        _add_log_level(command, argparse.SUPPRESS)
    return parser


def _add_log_level(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-level",
        type=str.upper,
        default=default,
        choices=LOG_LEVELS,
        help=f"logging level of the smcp_sync logger, on stderr (default: {DEFAULT_LOG_LEVEL})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (also for --help and argument errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse has printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    with _logging_at(args.log_level):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # whoever read stdout has gone (`| head`): stop without a word
        _discard_stdout()
        return EXIT_FAILURE
    except Exception as exc:  # a bug, or a failure no command expected: one line all the same
        logger.debug("smcp-sync %s failed", args.command, exc_info=True)
        print(
            f"smcp-sync {args.command}: unexpected {type(exc).__name__}: {redact_text(str(exc))} (--log-level DEBUG shows where)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush does not fail too
    (the recipe of the `signal` module's documentation)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (stdout replaced in-process)
        pass


class _WithoutOAuthFlowTracebacks(logging.Filter):
    """Drops the mcp SDK's ``OAuth flow error``: an ERROR with a traceback and the
    authorization server's answer for each refused grant, which smcp_sync reports itself
    in one line naming the server and the exception type (docs/computer/oauth.md). Shown
    at --log-level DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "OAuth flow error"


@contextlib.contextmanager
def _logging_at(level: str) -> Iterator[None]:
    """`level` for smcp_sync's loggers; other libraries' (mcp, socketio, werkzeug...) stay
    at WARNING or above, so that DEBUG shows our story rather than their wire traffic.
    The smcp_sync level is restored afterwards (main() may run inside a program)."""
    logging.basicConfig(
        level=max(logging.WARNING, logging.getLevelName(level)),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ours = logging.getLogger("smcp_sync")
    previous = ours.level
    ours.setLevel(level)
    oauth_flow, quiet = logging.getLogger("mcp.client.auth.oauth2"), _WithoutOAuthFlowTracebacks()
    if level != "DEBUG":
        oauth_flow.addFilter(quiet)
    try:
        yield
    finally:
        ours.setLevel(previous)
        oauth_flow.removeFilter(quiet)


if __name__ == "__main__":
    sys.exit(main())
