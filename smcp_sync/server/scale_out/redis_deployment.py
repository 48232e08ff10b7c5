"""What names one deployment in a shared Redis, and what of its URL may be shown.

Redis pub/sub channels span every database of an instance, so a database of its own does
not keep two deployments apart: every key and channel a node uses (the office registry's
and python-socketio's `RedisManager` channel) starts with the deployment's prefix
(docs/server/scale-out.md). The URL may carry a password: only `redacted(url)` is ever logged.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from redis.connection import parse_url

#: A prefix is a short run of printable characters without spaces (it names keys).
_PREFIX = re.compile(r"[!-~]{1,64}")


def deployment_prefix(url: str, prefix: str | None = None) -> str:
    """`prefix` checked, or the default for `url`: ``smcp:<database>:``; raise ValueError
    naming what is wrong with either."""
    if prefix is None:
        try:
            database = parse_url(url).get("db", 0)
        except ValueError as exc:
            raise ValueError(f"cannot read the Redis URL {redacted(url)!r}: {exc}") from None
        return f"smcp:{database}:"
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(f"redis_prefix must be 1 to 64 printable ASCII characters without spaces, not {prefix!r}")
    return prefix


def redacted(url: str) -> str:
    """`url` with its password (and user name) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a Redis URL that cannot be parsed>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))
