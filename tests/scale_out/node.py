"""One Server node of a scale-out, as its own process: `SMCPServer(redis=RedisOptions(...))` started
on a loopback port. Prints ``{"url": URL, "pid": PID}`` once serving, then serves until
its stdin closes (then stops cleanly) or it is killed.

    python tests/scale_out/node.py REDIS_URL [REDIS_PREFIX [NODE_TTL]]

NODE_TTL (seconds) replaces the heartbeat's default TTL (`RedisOptions.node_ttl`).
"""

from __future__ import annotations

import json
import os
import sys

from smcp_sync import SMCPServer
from smcp_sync.server import RedisOptions


def node(url: str, prefix: str | None, node_ttl: float | None) -> SMCPServer:
    if node_ttl is None:
        return SMCPServer(redis=RedisOptions(url, prefix=prefix))
    return SMCPServer(redis=RedisOptions(url, prefix=prefix, node_ttl=node_ttl))


def main() -> None:
    prefix = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
    node_ttl = float(sys.argv[3]) if len(sys.argv) > 3 else None
    with node(sys.argv[1], prefix, node_ttl) as server:
        print(json.dumps({"url": server.start(), "pid": os.getpid()}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
