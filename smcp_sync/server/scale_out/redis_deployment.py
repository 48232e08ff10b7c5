"""What names one deployment in a shared Redis, and what of its URL may be shown.

Redis pub/sub channels span every database of an instance, so a database of its own does
not keep two deployments apart: every key and channel a node uses (the office registry's
and python-socketio's `RedisManager` channel) starts with the deployment's prefix
(docs/server/scale-out.md). The URL may carry a password (as user info or ``?password=``): it
is shown only through `protocol.redaction.redact_url`.
"""

from __future__ import annotations

import re

from ...protocol.redaction import redact_url
from .redis_connection import database

#: A prefix is a short run of printable characters without spaces (it names keys).
_PREFIX = re.compile(r"[!-~]{1,64}")


def deployment_prefix(url: str, prefix: str | None = None) -> str:
    """`prefix` checked, or the default for `url`: ``smcp:<database>:``; raise ValueError
    naming what is wrong with either."""
    try:
        number = database(url)
    except ValueError as exc:
        raise ValueError(f"cannot read the Redis URL {redact_url(url)!r}: {exc}") from None
    if prefix is None:
        return f"smcp:{number}:"
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(f"redis_prefix must be 1 to 64 printable ASCII characters without spaces, not {prefix!r}")
    return prefix

