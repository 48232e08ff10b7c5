"""Running the Server: start/stop in the background, transports, big messages, mounting."""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest

from smcp_sync.protocol import events
from smcp_sync.protocol.errors import ErrorCode
from smcp_sync.server import SMCPServer
from smcp_sync.server.transport.background_http import BackgroundHTTPServer

from ..payloads import CLIENT_REQUESTS
from ..peers import Peer

pytestmark = pytest.mark.timeout(60)


def test_start_returns_the_bound_url_and_stop_ends_every_thread(no_leaks):
    with SMCPServer() as server:
        url = server.start()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url) and not url.endswith(":0")
        assert server.url == url
        with pytest.raises(RuntimeError, match="already serving"):
            server.start()
        peer = Peer(url)
        assert peer.join("agent", "a1", "o1") == (True, None)
        peer.close()
    assert server.url is None
    server.stop()  # idempotent
    with pytest.raises(RuntimeError, match="cannot be started again"):
        server.start()


def test_start_on_a_busy_port_raises_oserror_and_prints_nothing(no_leaks, capfd):
    with SMCPServer() as first:
        port = int(first.start().rsplit(":", 1)[1])
        second = SMCPServer()
        with pytest.raises(OSError) as raised:
            second.start(port=port)
        assert raised.value.errno is not None
        second.stop()
    assert capfd.readouterr().err == ""


def test_stop_with_connected_peers_drops_them_and_fails_their_pending_calls(server_factory):
    server = server_factory()
    computer = Peer(server.url)
    agent = Peer(server.url)
    try:
        computer.join("computer", "c1", "o1")
        agent.join("agent", "a1", "o1")
        reached, release = threading.Event(), threading.Event()
        computer.answer(events.TOOL_CALL, lambda data: reached.set() or release.wait(10) and None)
        dropped = threading.Event()
        agent.client.on("disconnect", lambda reason=None: dropped.set(), namespace="/smcp")
        # The Agent's connection goes too, so its call can only time out (client side).
        forwarded = threading.Thread(
            target=lambda: _swallow(agent.call, events.TOOL_CALL, CLIENT_REQUESTS[events.TOOL_CALL], timeout=1)
        )
        forwarded.start()
        assert reached.wait(5)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 3
        assert dropped.wait(5)
        assert len(server.pending) == 0 and server.registry.members("o1") == []
        release.set()
        forwarded.join(10)
    finally:
        computer.close()
        agent.close()


def _swallow(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception:  # the connection is gone before the answer: expected here
        pass


def test_polling_only_clients_work_end_to_end(office):
    computer = office("computer", "c1", transports=("polling",))
    computer.answer(events.GET_TOOLS, lambda data: {"tools": [], "req_id": data["req_id"]})
    agent = office("agent", "a1", transports=("polling",))
    assert computer.wait_for(events.ENTER_OFFICE_NOTIFICATION) == {"office_id": "office-1", "agent": "a1"}
    assert agent.call(events.GET_TOOLS, CLIENT_REQUESTS[events.GET_TOOLS]) == {"tools": [], "req_id": "r"}


def test_answers_bigger_than_engineio_default_buffer_are_relayed(office):
    big = "x" * (5 * 1024 * 1024)
    computer = office("computer", "c1")
    computer.answer(events.TOOL_CALL, lambda data: {"content": [{"type": "text", "text": big}], "isError": False})
    agent = office("agent", "a1")
    answer = agent.call(events.TOOL_CALL, CLIENT_REQUESTS[events.TOOL_CALL], timeout=20)
    assert len(answer["content"][0]["text"]) == len(big)


def test_mount_serves_socketio_and_passes_other_paths_to_the_app(no_leaks):
    def hello_app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"hello from {environ['PATH_INFO']}".encode()]

    server = SMCPServer()
    http = BackgroundHTTPServer(server.mount(hello_app), "127.0.0.1", 0)
    http.start()
    try:
        with urllib.request.urlopen(f"{http.url}/orders/7", timeout=5) as response:
            assert response.read() == b"hello from /orders/7"
        peer = Peer(http.url)
        assert peer.join("agent", "a1", "o1") == (True, None)
        peer.close()
    finally:
        http.stop_accepting(5)
        server.drop_connections()
        assert http.join_connections(5) == []


def test_error_answers_keep_their_code_for_a_dropped_computer_name(office):
    """After a Computer leaves, its name is unknown again (404), not a stale route."""
    computer = office("computer", "c1")
    agent = office("agent", "a1")
    computer.leave("office-1")
    answer = agent.call(events.GET_TOOLS, CLIENT_REQUESTS[events.GET_TOOLS])
    assert answer["code"] == ErrorCode.NOT_FOUND
