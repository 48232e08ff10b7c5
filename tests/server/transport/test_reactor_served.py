"""`serve(mode="threads")`: gunicorn's gthread worker hands each websocket over to the
one reactor thread (`transport/reactor.py`) once it is open, and every promise of the
transport holds there: the ping timeout, `cut`, the receive bound before
authentication, close frames, the connections cap, a clean stop. The reactor alone:
test_reactor.py."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.request
from typing import Callable, Iterator

import pytest
import websocket

from reliability.hostile import closed_by_server, engineio_websocket, joined_websocket
from reliability.served import Served, serving

from smcp_sync.protocol.events import NAMESPACE

from ..peers import Peer, echo_office, wait_until

pytestmark = pytest.mark.timeout(120)

#: Seconds a websocket may take to be closed by the Server once it should be.
CLOSED_WITHIN = 10.0


@pytest.fixture
def serve(no_leaks) -> Iterator[Callable[..., Served]]:
    with contextlib.ExitStack() as stack:
        yield lambda **options: stack.enter_context(serving(mode="threads", **options))


@pytest.fixture
def websockets() -> Iterator[list[websocket.WebSocket]]:
    """The test's websockets, shut when it ends (the Server may have closed them)."""
    opened: list[websocket.WebSocket] = []
    yield opened
    for ws in opened:
        ws.shutdown()


def _join_offices(url: str, offices: range, opened: list[websocket.WebSocket]) -> None:
    for office in offices:
        for role in ("agent", "computer"):
            opened.append(joined_websocket(url, role, f"{role}-{office}", f"office-{office}"))


def test_many_websockets_are_read_by_one_thread_not_two_each(serve, websockets):
    """40 websockets on a worker of 4 threads: gthread alone would serve 4 at once and
    accept 8; each websocket held its request's thread and Engine.IO's writer."""
    served = serve(threads=4)
    _join_offices(served.url, range(1), websockets)
    worker = served.worker()
    threads = worker.num_threads()
    _join_offices(served.url, range(1, 21), websockets)  # each join is read by the reactor
    wait_until(lambda: worker.num_threads() <= threads + 4)  # gthread's pool grows to its 4 threads at most
    assert len(websockets) == 42 and all(ws.connected for ws in websockets)


def test_clients_upgrading_from_polling_are_handed_over_and_routed(serve):
    """The upgrade's probe is read on the request's thread, then the reactor reads on."""
    served = serve(threads=4)
    computer = Peer(served.url, transports=("polling", "websocket"))
    agent = Peer(served.url, transports=("polling", "websocket"))
    try:
        assert computer.join("computer", "c1", "office-1") == (True, None)
        assert agent.join("agent", "a1", "office-1") == (True, None)
        wait_until(lambda: computer.client.eio.current_transport == agent.client.eio.current_transport == "websocket")
        computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": data["params"]["x"]}]})
        for text in ("over", "the", "reactor"):
            call = {"agent": "a1", "req_id": text, "computer": "c1", "tool_name": "echo", "params": {"x": text}, "timeout": 5}
            assert agent.call("client:tool_call", call) == {"content": [{"type": "text", "text": text}]}
    finally:
        agent.close()
        computer.close()


def test_a_connect_waiting_on_its_authentication_holds_up_no_other_office(serve, websockets):
    """A namespace CONNECT runs its `AuthProvider` off the reactor's thread: while one
    waits on an authentication service, another office's calls are answered, and the
    client is admitted once the service answers."""
    with socket.create_server(("127.0.0.1", 0)) as service:
        service.settimeout(CLOSED_WITHIN)
        served = serve(auth_gate=service.getsockname()[1])
        with echo_office(served.url) as call:
            waiting = engineio_websocket(served.url)
            websockets.append(waiting)
            waiting.send(f"40{NAMESPACE}," + json.dumps({"gate": True}))
            asked, _ = service.accept()  # the AuthProvider waits for this one's answer
            with asked:
                for text in ("answered", "while", "authenticating"):
                    assert call(text) == {"content": [{"type": "text", "text": text}]}
                asked.sendall(b"1")
                assert waiting.recv().startswith(f'40{NAMESPACE},{{"sid":')


def test_a_client_upgraded_from_long_polling_is_written_to_with_no_thread_per_message(serve, websockets):
    """A client that polls a while before upgrading (a browser's: its namespace connect
    and a join over long-polling, a poll in flight at the upgrade) is written to at once
    once on its websocket, as one that began there. The packets its polls took were
    counted as a writer's forever: each message to it was queued and started
    Engine.IO's writer, a thread of its own (94 threads for 300 answers)."""
    served = serve()
    ws = _polled_then_upgraded(served.url, "a1", "office-1")
    websockets.append(ws)
    worker = served.worker()
    seen, before = set(), {thread.id for thread in worker.threads()}
    with _sampling(lambda: seen.update(thread.id for thread in worker.threads())):
        for n in range(2, 302):
            listing = {"agent": "a1", "office_id": "office-1", "req_id": str(n)}
            ws.send(f"42{NAMESPACE},{n}" + json.dumps(["server:list_room", listing]))
            assert _answer(ws, n)[0]["req_id"] == str(n)
    assert len(seen - before) <= 2  # its writer's one start at the upgrade, a ping's


def _polled_then_upgraded(url: str, agent: str, office_id: str) -> websocket.WebSocket:
    """An Agent that connects and joins over long-polling, then upgrades to websocket as
    a browser does: a poll in flight, ended by the Server once the probe is answered."""
    polling = url + "/socket.io/?EIO=4&transport=polling"
    sid = json.loads(_http(polling)[0][1:])["sid"]
    polling += f"&sid={sid}"
    assert _http(polling, f"40{NAMESPACE},{{}}") == ["OK"]
    assert _http(polling)[0].startswith(f"40{NAMESPACE},")
    join = {"role": "agent", "name": agent, "office_id": office_id}
    assert _http(polling, f"42{NAMESPACE},1" + json.dumps(["server:join_office", join])) == ["OK"]
    assert _http(polling) == [f"43{NAMESPACE},1[true,null]"]
    in_flight: list[list[str]] = []
    poll = threading.Thread(target=lambda: in_flight.append(_http(polling)))
    poll.start()
    upgrade = url.replace("http://", "ws://") + f"/socket.io/?EIO=4&transport=websocket&sid={sid}"
    ws = websocket.create_connection(upgrade, timeout=10)
    ws.send("2probe")
    assert ws.recv() == "3probe"
    poll.join(10)
    assert in_flight == [["6"]]  # ended by a NOOP
    ws.send("5")
    return ws


def _http(url: str, post: str | None = None) -> list[str]:
    """The Engine.IO packets of a long-polling GET, or of a POST of `post`."""
    data = None if post is None else post.encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read().decode().split("\x1e")


def _answer(ws: websocket.WebSocket, id: int) -> list:
    """The ACK of event `id` (what comes before it, e.g. a ping, is skipped)."""
    prefix = f"43{NAMESPACE},{id}"
    while not (frame := ws.recv()).startswith(prefix + "["):
        pass
    return json.loads(frame[len(prefix):])


@contextlib.contextmanager
def _sampling(sample: Callable[[], None]) -> Iterator[None]:
    """`sample` called over and over on a thread of its own while the block runs."""
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            sample()

    sampler = threading.Thread(target=run, name="sampler")
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join(10)


def test_a_client_that_stops_answering_pings_is_closed_and_its_descriptor_freed(serve, websockets):
    served = serve(ping_interval=1, ping_timeout=1)
    websockets.append(joined_websocket(served.url, "agent", "before", "office-1"))
    worker = served.worker()
    descriptors = worker.num_fds()
    silent = joined_websocket(served.url, "agent", "silent", "office-2")  # never answers a ping
    websockets.append(silent)
    assert closed_by_server(silent, CLOSED_WITHIN)
    wait_until(lambda: worker.num_fds() <= descriptors)


def test_a_client_cut_in_the_middle_of_a_frame_is_closed(serve, websockets):
    """Half a frame, then nothing: its handshake deadline cuts it (`StoppableEngineIO.cut`)
    while the reactor waits for the rest."""
    served = serve(limits={"handshake_timeout": 1.0})
    ws = engineio_websocket(served.url)
    websockets.append(ws)
    ws.sock.sendall(b"\x81\xfe\x10")  # a masked text frame of 16-bit length, cut after its length's first byte
    assert closed_by_server(ws, CLOSED_WITHIN)


def test_a_client_sending_past_the_receive_bound_before_authenticating_is_closed(serve, websockets):
    served = serve(limits={"max_unauthenticated_bytes": 1024})
    ws = engineio_websocket(served.url)
    websockets.append(ws)
    ws.send("4" + "x" * 4096)
    assert closed_by_server(ws, CLOSED_WITHIN)
    joined = joined_websocket(served.url, "agent", "after", "office-1")  # the Server reads on
    websockets.append(joined)


def test_a_close_frame_is_answered_with_one(serve, websockets):
    served = serve()
    ws = joined_websocket(served.url, "agent", "leaving", "office-1")
    websockets.append(ws)
    ws.send_close(websocket.STATUS_NORMAL)
    while (frame := ws.recv_frame()).opcode != websocket.ABNF.OPCODE_CLOSE:
        pass  # the leave of its office may come first
    assert frame.data[:2] == websocket.STATUS_NORMAL.to_bytes(2, "big")


def test_a_websocket_past_connections_is_closed_once_open(serve, websockets):
    served = serve(connections=2)
    _join_offices(served.url, range(1), websockets)
    with pytest.raises(websocket.WebSocketConnectionClosedException):
        websockets.append(engineio_websocket(served.url))
    websockets[0].close()  # one leaves: room for one more
    wait_until(lambda: _opens(served.url, websockets))


def _opens(url: str, opened: list[websocket.WebSocket]) -> bool:
    try:
        opened.append(engineio_websocket(url))
    except websocket.WebSocketConnectionClosedException:
        return False
    return True


def test_sigterm_with_websockets_open_stops_cleanly_and_closes_them(serve, websockets):
    served = serve()
    _join_offices(served.url, range(5), websockets)
    assert served.stop() == 0
    assert all(closed_by_server(ws, CLOSED_WITHIN) for ws in websockets)


def test_a_client_that_reads_nothing_holds_up_no_other_connection(serve, websockets):
    """A client that reads nothing while big answers come for it has Engine.IO's writer
    stuck in a write to it (bounded by ping_interval + ping_timeout: 20 s here). What it
    sends meanwhile waits for that write, on its own; the reactor reads the others on:
    another office's calls are answered."""
    served = serve(ping_interval=10, ping_timeout=10)
    answered: list[str] = []
    peers = [Peer(served.url) for _ in range(3)]
    computer, agent, big_computer = peers
    try:
        assert computer.join("computer", "c1", "office-1") == big_computer.join("computer", "c2", "office-2") == (True, None)
        assert agent.join("agent", "a1", "office-1") == (True, None)
        computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": data["params"]["x"]}]})

        def big_answer(data: dict) -> dict:
            answered.append(data["req_id"])
            return {"content": [{"type": "text", "text": "x" * 256 * 1024}]}

        big_computer.answer("client:tool_call", big_answer)
        hostile = joined_websocket(served.url, "agent", "stuck", "office-2", receive_buffer=4096)
        websockets.append(hostile)
        for n in range(40):  # 10 MB of answers for a client that reads nothing
            call = {"agent": "stuck", "req_id": f"big-{n}", "computer": "c2", "tool_name": "echo", "params": {}, "timeout": 30}
            hostile.send(f"42{NAMESPACE},{n + 2}" + json.dumps(["client:tool_call", call]))
        wait_until(lambda: len(answered) == 40, timeout=30)
        for text in ("read", "the", "others"):
            hostile.send("3")  # an Engine.IO pong: it comes in while the writer is stuck
            call = {"agent": "a1", "req_id": text, "computer": "c1", "tool_name": "echo", "params": {"x": text}, "timeout": 5}
            assert agent.call("client:tool_call", call, timeout=5) == {"content": [{"type": "text", "text": text}]}
    finally:
        for peer in peers:
            peer.client.disconnect()


def test_a_client_that_sends_pings_and_reads_no_pongs_is_closed(serve, websockets):
    """The reactor answers a ping only if the socket takes the pong at once: a client
    that floods pings and reads nothing has its connection ended, and the reactor reads
    the others on."""
    served = serve()
    flooder = joined_websocket(served.url, "agent", "pinger", "office-1", receive_buffer=4096)
    websockets.append(flooder)
    pings = (b"\x89\xfd\x00\x00\x00\x00" + b"p" * 125) * 100  # masked pings of 125 bytes (a zero mask)
    flooder.sock.settimeout(CLOSED_WITHIN)
    with contextlib.suppress(OSError):  # sent until the Server ends it
        for _ in range(10_000):
            flooder.sock.sendall(pings)
    assert closed_by_server(flooder, CLOSED_WITHIN)
    websockets.append(joined_websocket(served.url, "agent", "after", "office-2"))
