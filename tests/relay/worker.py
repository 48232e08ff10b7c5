"""A worker process of a multi-process host, as the relay tests run it: one relay Agent
(`Agent.via_relay`), `--threads` threads each making `--calls` tool calls, one JSON line
per answer on stdout. Waits for a line on stdin first with `--go` (so that processes
start their calls together), and with `--notify EVENT` prints the notifications it gets
until stdin closes.

    python worker.py FOLDER URL OFFICE [--tool echo|sleep] [--calls N] [--threads T]
                     [--seconds S] [--go] [--notify EVENT] [--status]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from smcp_sync import Agent
from smcp_sync.relay.link import relay_status
from smcp_sync.relay.place import RelayPlace

_print_lock = threading.Lock()


def say(**line: Any) -> None:
    with _print_lock:
        print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("url")
    parser.add_argument("office")
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--go", action="store_true")
    parser.add_argument("--notify")
    parser.add_argument("--status", action="store_true")
    args = parser.parse_args()
    agent = Agent.via_relay("agent", url=args.url, office_id=args.office, relay_dir=args.folder)
    if args.notify:
        agent.on(args.notify, lambda note: say(notified=args.notify, computer=getattr(note, "computer", None)))
        agent.connect(args.url, timeout=30)
        say(attached=os.getpid())
    if args.go:
        sys.stdin.readline()

    def calls(thread: int) -> None:
        for n in range(args.calls):
            text = f"{os.getpid()}-{thread}-{n}"
            try:
                if args.tool == "sleep":
                    future = agent.submit_tool_call("c1", "tools__sleep", {"seconds": args.seconds}, timeout=60)
                    say(submitted=future.req_id)
                    result = future.result(90)
                else:
                    result = agent.call_tool("c1", "tools__echo", {"text": text}, timeout=30)
                say(sent=text, answer=result.content[0].text, is_error=result.is_error)
            except Exception as exc:
                say(sent=text, error=f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=calls, args=(t,)) for t in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if args.status:
        say(relay=relay_status(RelayPlace.at(args.folder), 10)["pid"])
    if args.notify:
        sys.stdin.read()
    agent.close()


if __name__ == "__main__":
    main()
