"""`smcp-sync agent-relay`: run the host's Agent relay in the foreground (or `--detach`ed).

Workers made with ``Agent.via_relay(...)`` attach to it through a socket in `--folder`
that only this user can open; they start it themselves when it is not running, so the
command is for running it under a supervisor, to see it (`--status`) or to stop it
(`--stop`). It exits by
itself after `--idle-timeout` seconds with no worker attached, and on SIGTERM or Ctrl-C
after leaving every office (exit 0). A relay already serving the folder: exit 1.
docs/hosts/relay.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
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
from ..relay.start import RelayStartError, detach, locked
from .exit_codes import EXIT_FAILURE, EXIT_OK
from .options import positive_seconds

#: Seconds `--status` waits for the relay's answer.
STATUS_TIMEOUT = 5.0
#: Seconds `--stop` waits for the relay to leave its offices and end.
STOP_TIMEOUT = 30.0


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
    parser.add_argument("--stop", action="store_true",
                        help="stop the running relay (SIGTERM: it leaves its offices) and wait for it to end")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    place = RelayPlace.at(args.folder)
    if args.status or args.stop:
        return _status(place, stop=args.stop)
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


def _status(place: RelayPlace, *, stop: bool) -> int:
    try:
        status = relay_status(place, STATUS_TIMEOUT)
    except ConnectionError as exc:
        print(f"smcp-sync agent-relay: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if not stop:
        print(json.dumps(status))
        return EXIT_OK
    os.kill(status["pid"], signal.SIGTERM)
    try:
        with locked(place, place.relay_lock, STOP_TIMEOUT, f"relay {status['pid']} still runs after {STOP_TIMEOUT:g}s"):
            pass  # the relay holds its lock until it has left its offices
    except RelayStartError as exc:
        print(f"smcp-sync agent-relay: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
