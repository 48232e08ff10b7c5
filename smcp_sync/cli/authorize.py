"""`smcp-sync authorize`: authorize this machine at an OAuth-protected MCP server from a
terminal (docs/computer/oauth.md, *From a terminal*).

    smcp-sync authorize SERVER --config FILE [--inputs FILE] [--input ID=VALUE ...]
                        [--timeout SECONDS] [--no-browser] [--scope SCOPE ...] [--forget]

SERVER is the bundle_id of a server with an `oauth` block in --config (the file, inputs
and --input as `smcp-sync computer` reads them). The authorization URL is printed (and
opened in the web browser unless --no-browser); the redirect comes back to a listener on
127.0.0.1 at an ephemeral port, open until the user has granted it or --timeout passes.
The tokens are stored where every Computer of this user finds them (the OS keyring with
the [keyring] extra, else $XDG_CONFIG_HOME/smcp_sync/oauth), so `smcp-sync computer`
then starts the server authorized. A client credentials mode needs nobody: a token is
fetched and stored, no URL is shown. --scope asks for more (a server that answered a
call 4007 names the scope in its hint), even when a token is stored; --forget drops
the stored token.
"""

from __future__ import annotations

import argparse
from typing import Callable

from ..protocol.errors import BadRequestError, SMCPError
from .computer import configured_computer
from .exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .options import add_timeout, fail

DEFAULT_TIMEOUT = 300.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "authorize",
        help="authorize an OAuth-protected MCP server of a Computer config (prints the URL, waits for the user)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("server", help="the bundle_id of the MCP server to authorize")
    parser.add_argument("--config", required=True, metavar="FILE", help="MCP server configuration (JSON)")
    parser.add_argument("--inputs", metavar="FILE", help="input definitions (JSON), if not in --config")
    parser.add_argument(
        "--input", action="append", default=[], metavar="ID=VALUE", help="value of an input (repeatable)"
    )
    parser.add_argument("--no-browser", action="store_true", help="only print the authorization URL")
    parser.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="an OAuth scope to ask for besides the configured ones (repeatable); the user is asked again",
    )
    parser.add_argument(
        "--forget", action="store_true", help="drop the token stored for SERVER instead (it then needs authorizing)"
    )
    add_timeout(parser, DEFAULT_TIMEOUT, "seconds to wait for the user")
    # what `configured_computer` reads beyond the config: nothing runs tools here
    parser.set_defaults(
        func=run,
        name="authorize",
        landing_folder=None,
        user_skills=None,
        skill_home=None,
        allow_all_tools=False,
        forget_inputs=False,
    )


def run(args: argparse.Namespace) -> int:
    try:
        computer = configured_computer(args, only=args.server)
    except (BadRequestError, ValueError) as exc:
        return fail("authorize", exc.message if isinstance(exc, SMCPError) else str(exc), EXIT_USAGE)
    try:
        if args.forget:
            computer.forget_authorization(args.server, timeout=args.timeout)
            print(f"MCP server {args.server!r}: its stored token is dropped", flush=True)
            return EXIT_OK
        computer.start(args.timeout)  # the server alone: refused until authorized
        scopes = args.scope or None
        computer.authorize(args.server, _show(args.server, args.no_browser), timeout=args.timeout, scopes=scopes)
    except (SMCPError, TimeoutError, ValueError) as exc:
        return fail("authorize", exc.message if isinstance(exc, SMCPError) else str(exc), EXIT_FAILURE)
    finally:
        computer.close()
    print(f"MCP server {args.server!r} is authorized; its tokens are stored for the next runs", flush=True)
    return EXIT_OK


def _show(server: str, no_browser: bool) -> Callable[[str], None]:
    """`open_url`: prints the URL (it carries no secret: PKCE), and opens the browser."""

    def show(url: str) -> None:
        print(f"To authorize MCP server {server!r}, open this URL in a web browser:\n{url}", flush=True)
        if not no_browser:
            import webbrowser

            webbrowser.open(url)

    return show
