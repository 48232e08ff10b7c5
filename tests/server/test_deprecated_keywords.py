"""`SMCPServer`'s flat keywords of before its value objects (issue 35): kept one release,
each group warns naming the new spelling and builds the same value object; mixed with
that value object it is refused naming both."""

from __future__ import annotations

import pytest

from smcp_sync import SMCPServer
from smcp_sync.server import RedisOptions, ServerLimits

UNREACHABLE = "redis://127.0.0.1:1/0"


def test_the_limits_keywords_warn_and_build_the_same_limits():
    with pytest.warns(DeprecationWarning) as warned:
        server = SMCPServer(max_connections_per_ip=None, handshake_timeout=2.0)
    assert sorted(str(w.message) for w in warned) == [
        "SMCPServer(handshake_timeout=...) is deprecated; use SMCPServer(limits=ServerLimits(handshake_timeout=...))",
        "SMCPServer(max_connections_per_ip=...) is deprecated; "
        "use SMCPServer(limits=ServerLimits(max_connections_per_ip=...))",
    ]
    assert warned[0].filename == __file__  # the caller's line, not ours
    assert server.limits == SMCPServer(limits=ServerLimits(max_connections_per_ip=None, handshake_timeout=2.0)).limits
    assert server.limits != ServerLimits()


def test_the_redis_keywords_warn_and_build_the_same_redis_options(no_leaks):
    with pytest.warns(DeprecationWarning) as warned:
        server = SMCPServer(redis_url=UNREACHABLE, redis_prefix="blue:")
    try:
        assert [str(w.message).split("; ")[1] for w in warned] == [
            "use SMCPServer(redis=RedisOptions(url=...))",
            "use SMCPServer(redis=RedisOptions(prefix=...))",
        ]
        assert server.registry.prefix == "blue:"
        assert server._rebuild.keywords["redis"] == RedisOptions(UNREACHABLE, prefix="blue:")
    finally:
        server.stop()


def test_an_alias_with_its_value_object_is_refused_naming_both():
    with pytest.raises(TypeError, match=r"got limits= and max_send_backlog=: give max_send_backlog inside ServerLimits"):
        SMCPServer(limits=ServerLimits(), max_send_backlog=1024)
    with pytest.raises(TypeError, match=r"got redis= and redis_url="):
        SMCPServer(redis=RedisOptions(UNREACHABLE), redis_url=UNREACHABLE)


def test_the_gevent_rebuild_is_given_the_value_objects_not_the_aliases():
    limits = ServerLimits(max_send_backlog=4096)
    with pytest.warns(DeprecationWarning):
        server = SMCPServer(max_send_backlog=4096, ping_interval=7)
    assert server._rebuild.keywords["limits"] == limits
    assert "max_send_backlog" not in server._rebuild.keywords
    rebuilt = server._rebuild()  # what the gevent worker does, here in threading mode
    assert (rebuilt.limits, rebuilt.sio.eio.ping_interval) == (limits, 7)


def test_redis_options_are_checked_when_built():
    with pytest.raises(ValueError, match="node_ttl must be >= 1 second"):
        RedisOptions(UNREACHABLE, node_ttl=0.5)
    with pytest.raises(ValueError):
        RedisOptions("")
    assert UNREACHABLE not in repr(RedisOptions(UNREACHABLE))  # a URL may hold a password
