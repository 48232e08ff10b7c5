"""One Server node of a scale-out, as its own process: `SMCPServer(redis_url=...)` started
on a loopback port. Prints ``{"url": URL, "pid": PID}`` once serving, then serves until
its stdin closes (then stops cleanly) or it is killed.

    python tests/scale_out/node.py REDIS_URL [REDIS_PREFIX]
"""

from __future__ import annotations

import json
import os
import sys

from smcp_sync import SMCPServer


def main() -> None:
    prefix = sys.argv[2] if len(sys.argv) > 2 else None
    with SMCPServer(redis_url=sys.argv[1], redis_prefix=prefix) as server:
        print(json.dumps({"url": server.start(), "pid": os.getpid()}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
