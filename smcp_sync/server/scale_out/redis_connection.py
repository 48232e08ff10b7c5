"""The Redis a scale-out node talks to, from the one URL it is given.

The URL names Redis for python-socketio's `RedisManager` (the message queue) and for the
office registry alike, so it takes the forms that manager accepts: ``redis://`` and
``unix://``, ``rediss://`` (TLS; redis-py's ``ssl_*`` query arguments apply), and
``redis+sentinel://[[user]:password@]host:port[,host:port...]/db/service`` (the master
the Sentinels name, followed through a failover; docs/server/high-availability.md).
`database` (which `deployment_prefix` asks first) refuses anything else before either
connects.

The registry's connections come from a blocking pool: one for each event handler that
may run at once (`WorkerPool`'s bound) and a few for the heartbeat and the subscriber;
a burst beyond that (disconnects are handled on connection threads, any number) waits up
to `POOL_WAIT` for a free connection instead of failing (redis-py's default pool refuses
the 101st at once: "Too many connections").
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.connection import BlockingConnectionPool, parse_url
from redis.sentinel import Sentinel, SentinelConnectionPool
from socketio.redis_manager import parse_redis_sentinel_url

from ...threads.worker_pool import DEFAULT_MAX_WORKERS

#: Longest a Redis command may block (connect or answer).
REDIS_TIMEOUT = 2.0
#: The registry's connections: the handlers' and a few for its own threads.
POOL_SIZE = DEFAULT_MAX_WORKERS + 8
#: Longest a registry call waits for a free pooled connection.
POOL_WAIT = 5.0
SENTINEL_SCHEME = "redis+sentinel"
_DIRECT_SCHEMES = ("redis", "rediss", "unix")


class _BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """redis-py's Sentinel pool (connections to the master the Sentinels name, dropped
    when it changes) with its blocking pool's bounded wait for a free connection."""

    def disconnect(self, inuse_connections: bool = True) -> None:
        """The Sentinel pool passes `inuse_connections` when the master changes; before
        redis-py 7.1 the blocking pool's `disconnect` takes no argument and drops every
        connection (those in use talk to the old master anyway)."""
        if _DISCONNECT_CHOOSES:
            BlockingConnectionPool.disconnect(self, inuse_connections)
        else:
            BlockingConnectionPool.disconnect(self)


_DISCONNECT_CHOOSES = "inuse_connections" in inspect.signature(BlockingConnectionPool.disconnect).parameters


def database(url: str) -> int:
    """The database number `url` names (0 when it names none); ValueError saying what is
    wrong with a URL of none of the forms above (never quoting it: it may hold a password)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == SENTINEL_SCHEME:
        return int(_sentinel_parts(url)[2].get("db", 0))
    if scheme not in _DIRECT_SCHEMES:
        hint = " (Sentinel with TLS is not supported)" if scheme.startswith("rediss+") else ""
        raise ValueError(f"it must start with redis://, rediss://, unix:// or redis+sentinel://, not {scheme}://{hint}")
    return int(parse_url(url).get("db", 0))


def redis_client(url: str, *, read_timeout: float | None = REDIS_TIMEOUT, **options: Any) -> redis.Redis:
    """A client of the Redis `url` names, on a blocking pool of `POOL_SIZE`; reads time
    out after `read_timeout` (None: a subscriber's wait); `options` go to its connections."""
    options.update(
        socket_timeout=read_timeout, socket_connect_timeout=REDIS_TIMEOUT, max_connections=POOL_SIZE, timeout=POOL_WAIT
    )
    if urlsplit(url).scheme.lower() != SENTINEL_SCHEME:
        return redis.Redis(connection_pool=BlockingConnectionPool.from_url(url, **options))
    sentinels, service, credentials = _sentinel_parts(url)
    # the Sentinels are asked with the same connect and read bounds (their socket_* options)
    sentinel = Sentinel(sentinels, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
    client: redis.Redis = sentinel.master_for(service, connection_pool_class=_BlockingSentinelPool, **credentials, **options)
    return client


def manager_options() -> dict[str, Any]:
    """What python-socketio's `RedisManager` is given to connect with (`redis_options`)."""
    return {"socket_connect_timeout": REDIS_TIMEOUT, "socket_timeout": REDIS_TIMEOUT}


def _sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, dict[str, Any]]:
    """The Sentinels' addresses, the service (master) name and the master's credentials and
    database, as python-socketio's `RedisManager` reads them; ValueError when missing."""
    try:
        sentinels, service, options = parse_redis_sentinel_url(url)
    except ValueError:
        raise ValueError("a Sentinel URL lists host:port pairs: redis+sentinel://host:port[,host:port...]/0/mymaster") from None
    if not service:
        # python-socketio would ask the Sentinels for a master named after its channel
        raise ValueError("a Sentinel URL names the service after the database: redis+sentinel://host:port[,host:port...]/0/mymaster")
    return sentinels, service, options
