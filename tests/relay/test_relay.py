"""The Agent relay with real parts: a Server, a Computer with a real MCP tool server, the
relay as a real detached process, workers as real processes (docs/hosts/relay.md)."""

from __future__ import annotations

import base64
import contextlib
import os
import random
import select
import signal
import stat
import subprocess
import sys
import uuid
from multiprocessing import AuthenticationError
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from smcp_sync import Agent, SMCPError
from smcp_sync.connection.session import NotConnectedError
from smcp_sync.protocol import events
from smcp_sync.relay.link import relay_status
from smcp_sync.relay.place import RelayPlace, RelayPlaceError
from smcp_sync.relay.wire import Channel, RelayGone, dial, receive, send

from .conftest import OFFICE, Worker, relays_of, running_relay, wait_until

pytestmark = pytest.mark.timeout(180)


def agents_in(agent: Agent) -> list[str]:
    return [session.name for session in agent.list_room(timeout=10) if session.role == "agent"]


def test_workers_share_one_seat_and_every_answer_is_theirs(office: Any, place: RelayPlace) -> None:
    workers = [Worker(place, office.url, "--threads", "3", "--calls", "10") for _ in range(4)]
    answers = [line for worker in workers for line in worker.finish()]
    assert len(answers) == 4 * 3 * 10
    assert all("error" not in line and line["answer"] == line["sent"] and not line["is_error"] for line in answers), [
        line for line in answers if "error" in line or line.get("answer") != line["sent"]
    ][:3]
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        assert agents_in(agent) == ["agent"]
        assert relay_status(place, 10)["seats"] == 1
    assert len(relays_of(place)) == 1


def test_a_worker_killed_mid_call_leaves_nothing_pending(
    office: Any, place: RelayPlace, logs: dict[str, Path]
) -> None:
    worker = Worker(place, office.url, "--tool", "sleep", "--seconds", "60")
    req_id = worker.wait_for("submitted")[0]["submitted"]
    started = len(_lines(logs["SMCP_TEST_STARTED_LOG"]))
    wait_until(lambda: calls_in(place) == 1, 60, "the relay forwards the call")
    wait_until(lambda: len(_lines(logs["SMCP_TEST_STARTED_LOG"])) >= max(started, 1), 30, "the tool starts")
    worker.kill()
    wait_until(lambda: relay_status(place, 5)["calls"] == 0, 30, "the relay's call ends")
    cancelled = logs["SMCP_TEST_CANCEL_LOG"]
    wait_until(lambda: any("cancelled" in line for line in _lines(cancelled)), 30, "the MCP server sees the cancel")
    wait_until(lambda: len(office.pending) == 0, 30, "the Server has no call pending")
    assert req_id  # the call the worker had submitted is the one cancelled: the only one running
    status = relay_status(place, 5)
    assert status["sessions"] == 0 and status["calls"] == 0


def test_the_relay_killed_is_started_again_by_the_next_call(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        assert agent.call_tool("c1", "tools__echo", {"text": "one"}, timeout=20).content[0].text == "one"
        first = running_relay(place)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE,
                   10, "the relay is dead")  # fmt: skip
        assert agent.call_tool("c1", "tools__echo", {"text": "two"}, timeout=30).content[0].text == "two"
        second = running_relay(place)
        assert second not in (None, first)
        assert agents_in(agent) == ["agent"]


def test_two_workers_racing_to_start_the_relay_end_with_one(office: Any, place: RelayPlace) -> None:
    workers = [Worker(place, office.url, "--go", "--status") for _ in range(3)]
    for worker in workers:
        worker.say("go\n")
    lines = [worker.finish() for worker in workers]
    assert all(line[0]["answer"] == line[0]["sent"] for line in lines)
    assert len({line[-1]["relay"] for line in lines}) == 1
    assert len(relays_of(place)) == 1


def test_the_folder_is_private_and_a_wrong_key_is_refused(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        assert stat.S_IMODE(os.stat(place.folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(place.socket_path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(place.folder / "authkey").st_mode) == 0o600
        with pytest.raises(AuthenticationError):
            dial(place.socket_path, b"not the key" * 3, 10).close()
        assert agent.call_tool("c1", "tools__echo", {"text": "still"}, timeout=20).content[0].text == "still"
    os.chmod(place.folder, 0o755)
    with pytest.raises(RelayPlaceError, match="mode 0700 or stricter"):
        place.authkey()
    os.chmod(place.folder, 0o700)
    with pytest.raises(RelayPlaceError, match="too deep"):
        RelayPlace.at(place.folder / ("d" * 120)).prepare()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_attaches_by_itself(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        assert agent.call_tool("c1", "tools__echo", {"text": "parent"}, timeout=20).content[0].text == "parent"
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # the child: a call and a submitted call through the inherited Agent
            code = 1
            try:
                text = agent.call_tool("c1", "tools__echo", {"text": "child"}, timeout=20).content[0].text
                future = agent.submit_tool_call("c1", "tools__echo", {"text": "future"}, timeout=20)
                os.write(write_end, f"{text} {future.result(30).content[0].text}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            said = pipe.read().decode()
        _, status = os.waitpid(child, 0)
        assert (said, os.waitstatus_to_exitcode(status)) == ("child future", 0)
        assert agent.call_tool("c1", "tools__echo", {"text": "after"}, timeout=20).content[0].text == "after"
        assert relay_status(place, 5)["seats"] == 1


def test_notifications_reach_every_worker_that_asked(office: Any, place: RelayPlace) -> None:
    event = events.UPDATE_TOOL_LIST_NOTIFICATION
    listeners = [Worker(place, office.url, "--notify", event, "--calls", "0") for _ in range(2)]
    for listener in listeners:
        listener.wait_for("attached")
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        assert not agent.call_tool("c1", "tools__add_tool", {"name": "relayed"}, timeout=20).is_error
        for listener in listeners:
            assert listener.wait_for("notified")[0] == {"notified": event, "computer": "c1"}
        agent.call_tool("c1", "tools__remove_tool", {"name": "relayed"}, timeout=20)
    for listener in listeners:
        listener.finish()


def test_sigterm_makes_the_relay_leave_its_offices(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        relay = running_relay(place)
    assert relay is not None and relay_status(place, 5)["seats"] == 1  # the seat lingers, unheld
    os.kill(relay, signal.SIGTERM)
    wait_until(lambda: not relays_of(place), 30, "the relay ends")
    with Agent("agent") as direct:  # the seat is free: the relay left the office
        direct.connect(office.url, timeout=10)
        direct.join_office(OFFICE, timeout=10)
        assert agents_in(direct) == ["agent"]


def test_a_relay_with_no_worker_exits_by_itself(office: Any, place: RelayPlace) -> None:
    started = subprocess.run(
        [str(Path(sys.executable).with_name("smcp-sync")), "agent-relay", "--folder", str(place.folder), "--detach",
         "--idle-timeout", "3", "--seat-linger", "0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip  (no pipes: the detached relay would hold them open, and run() wait for it)
    assert started.returncode == 0
    relay = running_relay(place)
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        assert agent.call_tool("c1", "tools__echo", {"text": "once"}, timeout=20).content[0].text == "once"
        assert running_relay(place) == relay  # the one started by hand (3 s is its idle time to exit)
    wait_until(lambda: not relays_of(place), 30, "the idle relay exits")


def calls_in(place: RelayPlace) -> int | None:
    """The relay's calls in flight; None while no relay runs (it is being started)."""
    try:
        return int(relay_status(place, 5)["calls"])
    except NotConnectedError:
        return None


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_the_agent_api_through_the_relay(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        tools = agent.get_tools("c1", timeout=20)
        assert "tools__echo" in [tool.name for tool in tools]
        assert agent.tool_cache.wait_for("c1", 20) is not None  # filled after the seat opened
        assert agent.get_config("c1", timeout=20).servers
        assert agent.get_desktop("c1", timeout=20) == []
        assert agent.get_finder("c1", timeout=20).total_count == 0
        image = agent.call_tool("c1", "tools__image", {"size": 100_000, "seed": 7}, timeout=30)
        assert base64.b64decode(image.content[1].data) == random.Random(7).randbytes(100_000)  # a blob, fetched
        with pytest.raises(SMCPError) as refused:
            agent.call_tool("c9", "tools__echo", {"text": "x"}, timeout=10)
        assert refused.value.code == 404
        with pytest.raises(ValueError, match="office is 'relay-office'"):
            agent.join_office("another", timeout=5)


def test_bad_requests_to_the_relay_get_a_clear_error(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        channel = dial(place.socket_path, place.authkey(), 10)
        try:
            send(channel, {"op": "hello", "session": "probe", "role": "requests"})
            assert receive(channel, 10) == {"ok": {"pid": running_relay(place)}}
            for request, message in [
                ({"op": "call", "seat": "nope"}, "seat must be [url, office_id, agent name]"),
                ({"op": "call", "seat": [office.url, OFFICE, "agent"], "agent": "x", "event": "client:tool_call",
                  "payload": {}, "timeout": -1}, "timeout must be a positive number of seconds"),
                ({"op": "fly", "seat": [office.url, OFFICE, "agent"], "agent": "x"}, "unknown op 'fly'"),
                ({"op": "call", "seat": [office.url, "elsewhere", "agent"], "agent": "x", "event": "e", "timeout": 1},
                 "is not open in this relay"),
            ]:  # fmt: skip
                send(channel, request)
                answer = receive(channel, 10)
                assert answer["error"]["code"] == 400 and message in answer["error"]["message"], answer
        finally:
            channel.close()
        assert agent.call_tool("c1", "tools__echo", {"text": "fine"}, timeout=20).content[0].text == "fine"


class _Interrupted(Exception):
    """Raised by the test's alarm in the middle of a call."""


def _interrupt(signum: int, frame: Any) -> None:
    raise _Interrupted


def test_an_interrupted_call_is_cancelled(office: Any, place: RelayPlace, logs: dict[str, Path]) -> None:
    """Whatever ends a relay call's wait (here a signal handler's exception; Ctrl-C,
    a worker timeout alike) closes its socket: the relay cancels the call."""
    cancelled = logs["SMCP_TEST_CANCEL_LOG"]
    before = len(_lines(cancelled))
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        previous = signal.signal(signal.SIGALRM, _interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 2.0)
            with pytest.raises(_Interrupted):
                agent.call_tool("c1", "tools__sleep", {"seconds": 60}, timeout=90)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        wait_until(lambda: len(_lines(cancelled)) > before, 30, "the MCP server sees the cancel")
        wait_until(lambda: calls_in(place) == 0, 30, "the relay's call ends")
        assert agent.call_tool("c1", "tools__echo", {"text": "after"}, timeout=20).content[0].text == "after"


@contextlib.contextmanager
def request_socket(place: RelayPlace, session: str) -> Iterator[Channel]:
    """A request socket on the relay, made by hand as a worker's link makes one."""
    channel = dial(place.socket_path, place.authkey(), 10)
    try:
        send(channel, {"op": "hello", "session": session, "role": "requests"})
        assert "ok" in receive(channel, 10)
        yield channel
    finally:
        channel.close()


def _tool_call(office: Any, tool: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """A relay `call` request for tool call `tool` on c1, written by hand."""
    payload = {"agent": "agent", "req_id": uuid.uuid4().hex, "computer": "c1", "tool_name": tool, "params": params,
               "timeout": 30}  # fmt: skip
    return {"op": "call", "seat": [office.url, OFFICE, "agent"], "agent": "x", "event": events.TOOL_CALL,
            "payload": payload, "timeout": timeout}  # fmt: skip


def test_a_worker_that_stops_reading_holds_up_no_other_answer(office: Any, place: RelayPlace) -> None:
    """Answers are written by the seat's Socket.IO thread, which never waits for a worker:
    an answer larger than a socket's buffer, to a worker that reads nothing, leaves that
    thread free for the other calls of the same seat."""
    size = 400_000
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        with request_socket(place, "stalled") as stalled:
            send(stalled, _tool_call(office, "tools__big", {"size": size}, 30))
            assert select.select([stalled], [], [], 30)[0], "no answer started"  # and nobody reads the rest
            for n in range(20):
                assert agent.call_tool("c1", "tools__echo", {"text": f"t{n}"}, timeout=20).content[0].text == f"t{n}"
            answer = receive(stalled, 10)  # the rest, from a writer thread: whole
            assert answer["ok"]["content"][0]["text"] == ("0123456789" * (size // 10))[:size]


def test_the_relay_answers_408_when_a_call_outlives_its_timeout(office: Any, place: RelayPlace) -> None:
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        with request_socket(place, "probe") as channel:
            send(channel, _tool_call(office, "tools__sleep", {"seconds": 2}, 0.3))
            answer = receive(channel, 10)
            assert answer["error"]["code"] == 408 and "no answer to client:tool_call within 0.3s" in answer["error"]["message"]
            send(channel, {"op": "status"})  # the socket goes on
            assert receive(channel, 10)["ok"]["calls"] == 0


def test_a_request_before_the_answer_ends_the_socket_and_cancels_the_call(
    office: Any, place: RelayPlace, logs: dict[str, Path]
) -> None:
    """A worker sends nothing while its call is under way (`link`); one that does is not
    ours to trust: the relay ends the socket, and the call is cancelled as if it had died."""
    started, cancelled = logs["SMCP_TEST_STARTED_LOG"], logs["SMCP_TEST_CANCEL_LOG"]
    before = len(_lines(started)), len(_lines(cancelled))
    with Agent.via_relay("agent", url=office.url, office_id=OFFICE, relay_dir=place.folder) as agent:
        agent.connect(office.url, timeout=30)
        with request_socket(place, "rude") as rude:
            send(rude, _tool_call(office, "tools__sleep", {"seconds": 60}, 90))
            wait_until(lambda: len(_lines(started)) > before[0], 30, "the tool starts")
            send(rude, {"op": "status"})
            with pytest.raises(RelayGone):
                receive(rude, 10)
        wait_until(lambda: len(_lines(cancelled)) > before[1], 30, "the MCP server sees the cancel")
        wait_until(lambda: calls_in(place) == 0, 30, "the relay's call ends")
