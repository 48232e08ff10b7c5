"""`smcp-sync agent-relay`: run the host's Agent relay in the foreground (or `--detach`ed).

Workers made with ``Agent.via_relay(...)`` attach to it through a socket in `--folder`
that only this user can open; they start it themselves when it is not running, so the
command is for running it under a supervisor, or to see it (`--status`). It exits by
itself after `--idle-timeout` seconds with no worker attached, and on SIGTERM or Ctrl-C
after leaving every office (exit 0). A relay already serving the folder: exit 1.
docs/hosts/relay.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..relay.link import relay_status
from ..relay.place import RelayPlace, RelayPlaceError, default_folder
from ..relay.process import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_SEAT_LINGER,
    RelayRunning,
    serve_relay,
)
from ..relay.start import detach
from .exit_codes import EXIT_FAILURE, EXIT_OK
from .options import positive_seconds

#: Seconds `--status` waits for the relay's answer.
STATUS_TIMEOUT = 5.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "agent-relay",
        help="run the Agent relay several worker processes share one office seat through",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--folder", type=Path, default=None,
                        help=f"the relay's private folder (default: $SMCP_RELAY_DIR or {default_folder()})")
    parser.add_argument("--idle-timeout", type=positive_seconds, default=DEFAULT_IDLE_TIMEOUT,
                        help=f"exit after this many seconds with no worker attached (default: {DEFAULT_IDLE_TIMEOUT:g})")
    parser.add_argument("--seat-linger", type=float, default=DEFAULT_SEAT_LINGER,
                        help=f"seconds a seat no worker holds stays in its office (default: {DEFAULT_SEAT_LINGER:g})")
    parser.add_argument("--detach", action="store_true", help="run in the background; exit 0 once it listens")
    parser.add_argument("--status", action="store_true", help="print the running relay's counts as JSON and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    place = RelayPlace.at(args.folder)
    if args.status:
        return _status(place)
    try:
        if args.detach:
            return detach(lambda ready: serve_relay(
                place, idle_timeout=args.idle_timeout, seat_linger=args.seat_linger, on_listening=ready))
        print(f"smcp-sync agent-relay serving {place.socket_path}", flush=True)
        serve_relay(place, idle_timeout=args.idle_timeout, seat_linger=args.seat_linger)
    except (RelayRunning, RelayPlaceError) as exc:
        print(f"smcp-sync agent-relay: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _status(place: RelayPlace) -> int:
    try:
        print(json.dumps(relay_status(place, STATUS_TIMEOUT)))
    except ConnectionError as exc:
        print(f"smcp-sync agent-relay: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
