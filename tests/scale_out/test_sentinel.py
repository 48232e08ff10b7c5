"""Redis high availability through Sentinel: two Server node processes given one
``redis+sentinel://`` URL (the message queue and the office registry alike), a master, a
replica and three Sentinels of the test's own. The master is SIGKILLed: the Sentinels
promote the replica, the nodes follow it, see a new epoch (another Redis process holds
the data) and write their members back: the office is whole again and a call crosses
the nodes, with nobody in it twice and its Agent's place still taken."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from computer.helpers import wait_until

from smcp_sync import Agent, SMCPServer
from smcp_sync.protocol import ErrorCode
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.server import RedisOptions

from .parts import certificates, nodes, redis_server, sentinel_group
from .test_redis_restart import NO_RECONNECT, TIMEOUT, answered_by, listed, named_computer

pytestmark = pytest.mark.timeout(120)

#: Bound for the office to be whole and routed again after the master is killed (the
#: Sentinels take ~2 s to promote the replica: benchmarks/README.md, Sentinel failover).
RECOVERED = 30.0


def test_a_sentinel_failover_is_survived_like_a_redis_restart(tmp_path: Path) -> None:
    with sentinel_group(tmp_path) as group, nodes(group.url, 2) as (a, b), contextlib.ExitStack() as stack:
        agent = stack.enter_context(Agent("agent", reconnect=NO_RECONNECT))
        agent.connect(a.url, timeout=TIMEOUT)
        agent.join_office("ha", timeout=TIMEOUT)
        stack.enter_context(named_computer(b.url, "ha", "pc"))
        assert agent.call_tool("pc", "who", {}, timeout=TIMEOUT).text == "pc"  # b listened before it took pc
        whole = {("agent", "agent"), ("computer", "pc")}
        assert listed(agent) == whole

        epoch = group.master.command("GET", "smcp:0:epoch")
        group.master.kill()
        wait_until(lambda: group.master_port() == group.replica.port, RECOVERED, "the replica promoted")
        # the replica had the old master's data, epoch included: the nodes see it is another Redis's
        wait_until(lambda: group.replica.command("GET", "smcp:0:epoch") not in (None, epoch), RECOVERED, "a new epoch")
        wait_until(lambda: answered_by(agent, "pc") == "pc", RECOVERED, "a call across the nodes again")
        wait_until(lambda: listed(agent) == whole, RECOVERED, "the office whole again")
        with Agent("intruder", reconnect=NO_RECONNECT) as intruder:  # the Agent's place is taken still
            intruder.connect(b.url, timeout=TIMEOUT)
            with pytest.raises(SMCPError) as refused:
                intruder.join_office("ha", timeout=TIMEOUT)
            assert refused.value.code == ErrorCode.ROOM_FULL


def test_a_redis_url_of_another_form_is_refused_saying_which_forms_work() -> None:
    for url, says in (
        ("http://127.0.0.1:6379/0", "must start with redis://, rediss://, unix:// or redis+sentinel://"),
        ("rediss+sentinel://127.0.0.1:26379/0/mymaster", "Sentinel with TLS is not supported"),
        ("redis+sentinel://:s3cret@127.0.0.1:26379/0", "names the service after the database"),
        ("redis+sentinel://:s3cret@127.0.0.1/0/mymaster", "lists host:port pairs"),
    ):
        with pytest.raises(ValueError, match="cannot read the Redis URL") as refused:
            SMCPServer(redis=RedisOptions(url))
        assert says in str(refused.value) and "s3cret" not in str(refused.value)


def test_nodes_share_offices_through_a_redis_spoken_to_over_tls(tmp_path: Path, no_leaks: None) -> None:
    with redis_server(tls=certificates(tmp_path)) as redis, contextlib.ExitStack() as stack:
        assert redis.url.startswith("rediss://")  # and the server has no plain-text port
        a = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        b = stack.enter_context(SMCPServer(redis=RedisOptions(redis.url)))
        a.start(), b.start()
        agent = stack.enter_context(Agent("agent", reconnect=NO_RECONNECT))
        agent.connect(a.url, timeout=TIMEOUT)
        agent.join_office("tls", timeout=TIMEOUT)
        stack.enter_context(named_computer(b.url, "tls", "pc"))
        # through the message queue (the first call waits for node b's TLS subscription)
        wait_until(lambda: answered_by(agent, "pc") == "pc", TIMEOUT, "a call across the nodes")
        assert listed(agent) == {("agent", "agent"), ("computer", "pc")}  # through the registry
        redis.command("FLUSHALL")
        wait_until(lambda: listed(agent) == {("agent", "agent"), ("computer", "pc")}, TIMEOUT, "written back")
