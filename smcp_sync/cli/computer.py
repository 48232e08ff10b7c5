"""`smcp-sync computer`: host MCP servers and serve their tools to an office until stopped.

    smcp-sync computer --config FILE --url URL --office OFFICE --name NAME
                       [--inputs FILE] [--input ID=VALUE ...] [--api-key KEY]
                       [--landing-folder DIR] [--user-skills DIR] [--skill-home DIR]
                       [--allow-all-tools] [--forget-inputs]

--config holds the official A2C-SMCP SDK's JSON: one MCP server config, a list of them,
or {"servers": [...], "inputs": [...]}; --inputs an input definition or a list of them.
A `${input:ID}` without a value (--input) is read from the environment variable
A2C_SMCP_<ID>, else from what an earlier run was told, else asked on the terminal when
there is one (hidden for password inputs; the answer is remembered, as a2c-smcp 0.4.2's
CLI does: a password in the OS keyring with the [keyring] extra, never in clear, the rest
in $XDG_STATE_HOME/a2c/input-values.json; --forget-inputs neither reads nor keeps them);
otherwise its default is used, or the command fails.
MCP servers that fail to start are retried in the background; the rest serve at once.
Nobody is there to confirm a tool call: a tool without `auto_apply: true` in its config
is refused (4005) unless --allow-all-tools is given (the refusal the Agent gets says so). An MCP server asking the user to
fill in a form (elicitation) is answered on the terminal when there is one (each field
asked in turn, Enter keeps its default, Ctrl-D cancels), and a server asking for a
wider OAuth scope during a call has its authorization URL shown there; without one the
server is told the client cannot elicit, and such a call is refused (4007).
Runs until Ctrl-C (exit 130) or SIGTERM (exit 0); a dropped connection is re-made.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import threading
from typing import TYPE_CHECKING, Any

from ..protocol.errors import BadRequestError, SMCPError
from ..protocol.models import MCPServerInput, PickStringInput, PromptStringInput
from ..protocol.redaction import redact_url
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .options import add_client_auth, add_json, add_timeout, add_url, client_credentials, fail, failure
from .signals import Terminated, sigterm_raises, wait_for_signals
from .waiting import terminal, waiting

if TYPE_CHECKING:
    from ..computer import ClientFeatures, Computer, ServerStatus

#: How an Agent refused a tool (4005) learns to allow it: nobody at this command confirms.
NO_ONE_CONFIRMS = "start it with --allow-all-tools or set auto_apply: true for the tool in its --config"

# The Computer's modules are imported where they are used: they load the MCP SDK (~1 s),
# which `smcp-sync agent` / `server` / `--help` do not need.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "computer",
        help="host MCP servers and serve their tools to an office",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="MCP server configuration (JSON)")
    add_url(parser)
    parser.add_argument("--office", required=True, help="office (room) id to join")
    parser.add_argument("--name", required=True, help="this Computer's name in the office")
    parser.add_argument("--inputs", metavar="FILE", help="input definitions (JSON), if not in --config")
    parser.add_argument(
        "--input", action="append", default=[], metavar="ID=VALUE", help="value of an input (repeatable)"
    )
    parser.add_argument(
        "--landing-folder", metavar="DIR", help="where agents' uploads (client:put_blob) land; without it they are refused"
    )
    parser.add_argument(
        "--user-skills", metavar="DIR", help="a folder of your own SKILL packages (DIR/<skill>/SKILL.md)"
    )
    parser.add_argument(
        "--skill-home", metavar="DIR", help="where SKILL packages MCP servers serve as resources are written"
    )
    parser.add_argument(
        "--allow-all-tools",
        action="store_true",
        help="run every tool an agent calls; by default a tool without auto_apply: true in its config is refused"
        " (4005), there being no one to confirm it",
    )
    parser.add_argument(
        "--forget-inputs",
        action="store_true",
        help="neither use nor remember input values answered on the terminal in earlier runs",
    )
    parser.add_argument(
        "--allow-failed-servers",
        action="store_true",
        help="join even when some MCP servers did not start (they keep retrying); by default that is an error",
    )
    add_client_auth(parser)
    add_timeout(parser, 30.0, "seconds for starting and joining")
    add_json(parser, "print the ready line as JSON: computer, office_id, url, tools, servers")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..computer import ServersNotStartedError

    try:
        computer = configured_computer(args)
        auth, headers = client_credentials(args)
    except (BadRequestError, ValueError) as exc:
        return _fail(exc.message if isinstance(exc, SMCPError) else str(exc), EXIT_USAGE)
    try:
        with sigterm_raises():
            with waiting(f"starting the MCP servers and joining {args.office!r}", terminal(sys.stderr, args.json)):
                computer.start(args.timeout, require_all=not args.allow_failed_servers)
                computer.connect(args.url, args.office, auth=auth, headers=headers, timeout=args.timeout)
            print(_summary(computer, args), flush=True)
            _AuthorizeLines(args.config).watch(computer)
            wait_for_signals()
    except Terminated:
        return EXIT_OK
    except (SMCPError, ServersNotStartedError) as exc:
        computer.close()  # first: what the MCP servers log as they stop (a retry) comes before the error line
        return _fail(failure(exc) + _authorize_hint(exc, args.config), EXIT_FAILURE)
    finally:
        computer.close()


def configured_computer(args: argparse.Namespace, only: str | None = None) -> Computer:
    """The Computer of --config / --inputs / --input (with `only`, of that server alone).
    A configuration error names the file and, for a server config, the server; the
    field is in the codec's message."""
    from ..computer import BlobOptions, Computer, InputMemory, Inputs, NoOneConfirms, SkillsOptions, allow_all
    from ..computer.config.files import ConfigError, load_config, load_inputs, server_bundle_id

    values = dict(_assignment(text) for text in args.input)
    config = _in_file(args.config, load_config)
    servers = [server for server in config.servers if only is None or server_bundle_id(server) == only]
    if not servers and only is not None:
        raise ConfigError(f"{args.config}: no MCP server {only!r}", details={"mcp_server": only})
    inputs = [*config.inputs, *(_in_file(args.inputs, load_inputs) if args.inputs else ())]
    computer = Computer(
        args.name,
        confirm=allow_all if args.allow_all_tools else NoOneConfirms(NO_ONE_CONFIRMS),
        client_features=_terminal_features() if sys.stdin.isatty() else None,
        inputs=Inputs(definitions=inputs, values=values, resolver=_ask_on_terminal if sys.stdin.isatty() else None, memory=None if args.forget_inputs else InputMemory()),
        blobs=BlobOptions(landing_folder=args.landing_folder),
        skills=SkillsOptions(user_folder=args.user_skills, home=args.skill_home),
    )
    for index, server in enumerate(servers):
        try:
            computer.servers.add(server)
        except BadRequestError as exc:
            computer.close()
            where = repr(server["name"]) if isinstance(server.get("name"), str) else f"#{index + 1}"
            hint = f" (on the command line: --input {exc.details['input']}=VALUE)" if "input" in exc.details else ""
            named = "" if exc.message.startswith("MCP server ") else f"MCP server {where}: "
            raise ConfigError(f"{args.config}: {named}{exc.message}{hint}", details=exc.details) from None
    return computer


def _terminal_features() -> ClientFeatures:
    """Elicitations answered, and a scope step-up's URL shown, on the terminal (`terminal_answers`)."""
    from ..computer import ClientFeatures
    from .terminal_answers import answer_on_terminal, show_authorization_url

    return ClientFeatures(elicit=answer_on_terminal, open_url=show_authorization_url)


class _AuthorizeLines:
    """Once the Computer serves: one line on stderr, once per MCP server, saying how to
    authorize each server that waits for an OAuth authorization, now or later."""

    def __init__(self, config: str) -> None:
        self._config = config
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def watch(self, computer: Computer) -> None:
        computer.add_listener(lambda event: self._tell(event.status) if event.status is not None else None)
        for status in computer.servers.statuses():
            self._tell(status)

    def _tell(self, status: ServerStatus) -> None:
        from ..computer import ServerState

        if status.state is not ServerState.NEEDS_AUTHORIZATION:
            return
        with self._lock:
            if status.bundle_id in self._told:
                return
            self._told.add(status.bundle_id)
        command = f"smcp-sync authorize {status.bundle_id} --config {self._config}"
        print(f"smcp-sync computer: MCP server {status.bundle_id!r} needs an OAuth authorization: {command}", file=sys.stderr, flush=True)


def _authorize_hint(exc: Exception, config: str) -> str:
    """How to authorize the servers that did not start for want of an OAuth authorization."""
    waiting = [s.bundle_id for s in getattr(exc, "statuses", ()) if s.authorization_code is not None]
    commands = "; ".join(f"smcp-sync authorize {server} --config {config}" for server in waiting)
    return f" (authorize them first: {commands})" if waiting else ""


def _in_file(path: str, load: Any) -> Any:
    """`load` the JSON document of `path`; its errors say which file."""
    from ..computer.config.files import ConfigError, read_json

    document = read_json(path)  # unreadable or not JSON: a ConfigError naming the file
    try:
        return load(document)
    except BadRequestError as exc:
        raise ConfigError(f"{path}: {exc.message}", details=exc.details) from None


def _summary(computer: Computer, args: argparse.Namespace) -> str:
    from ..computer import ServerState

    statuses = computer.servers.statuses()
    down = [s.bundle_id for s in statuses if s.state not in (ServerState.RUNNING, ServerState.DISABLED)]
    if args.json:
        servers = {s.bundle_id: str(s.state.value) for s in statuses}
        tools = [tool.name for tool in computer.tools()]
        return json.dumps(
            {"computer": computer.name, "office_id": args.office, "url": redact_url(args.url), "tools": tools, "servers": servers}
        )
    note = f"; not running yet: {', '.join(down)}" if down else ""
    return (
        f"computer {computer.name!r} joined office {args.office!r} at {redact_url(args.url)} with {len(computer.tools())} tools "
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
        # by number: labels may repeat, so the value is never looked up by label
        choices = item.choices
        for number, (label, _) in enumerate(choices, 1):
            print(f"  {number}. {label}")
        answer = input(f"{item.description} ({item.id}) [1-{len(choices)}]: ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1][1]
        return answer or None
    return None


def _fail(message: str, code: int) -> int:
    return fail("computer", message, code)
