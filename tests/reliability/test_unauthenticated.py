"""What a client that has not authenticated can make the Server do (issue 24), against a
Server in its own process: read big messages (bounded by `max_unauthenticated_bytes`,
measured as the Server's peak RSS), guess keys (a budget per socket and per address,
refusals logged as counts), stay on outside the namespace (the handshake deadline)."""

from __future__ import annotations

import contextlib
import json
import re
import struct
import threading
import urllib.request

import websocket

from smcp_sync.protocol import events

from .hostile import IO_TIMEOUT, close_all, closed_by_server, engineio_websocket, tcp_connection
from .parts import wait_until
from .raw_socket import RawSocket

KEY = "the-right-key"
MiB = 1024 * 1024
#: Just under the Server's default `max_http_buffer_size` (16 MiB): a message it would
#: read and decode whole from an authenticated client.
BIG = 16 * MiB - 4096
REAPED_WITHIN = 10.0


def _send_big_text_frame(ws: websocket.WebSocket, size: int) -> int:
    """Stream one websocket text frame of `size` bytes (a namespace CONNECT whose auth is
    mostly padding) in 64 KiB writes; how many bytes went out before the Server cut it."""
    head = f'40{events.NAMESPACE},{{"token":"'.encode()
    # FIN + text; masked, 64-bit length; an all-zero mask key leaves the payload as it is
    frame = struct.pack("!BBQ", 0x81, 0x80 | 127, size) + b"\0\0\0\0" + head
    chunk = b"a" * (64 * 1024)
    sent = 0
    try:
        ws.sock.sendall(frame)
        while sent < size - len(head):
            ws.sock.sendall(chunk[: size - len(head) - sent])
            sent += len(chunk)
    except OSError:
        pass
    return sent


def test_big_messages_before_authentication_close_the_socket_unread(server_process):
    server = server_process(key=KEY, ping_interval=2)  # a closed session's ping thread ends at its next ping
    warm = RawSocket(server.url, auth={"token": KEY})  # code paths loaded: the baseline is a working Server
    assert warm.emit(events.JOIN_OFFICE, {"role": "agent", "name": "a1", "office_id": "o1"}) == [True, None]
    baseline, threads = server.peak_rss(), server.process.num_threads()
    sockets = [engineio_websocket(server.url) for _ in range(8)]
    sent = [0] * len(sockets)

    def send(i: int) -> None:
        sent[i] = _send_big_text_frame(sockets[i], BIG)

    senders = [threading.Thread(target=send, args=(i,)) for i in range(len(sockets))]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(60)
    try:
        assert [closed_by_server(ws, REAPED_WITHIN) for ws in sockets] == [True] * len(sockets), sent
        assert all(n < BIG for n in sent), sent  # cut while sending
        grown = server.peak_rss() - baseline
        assert grown < 32 * MiB, f"peak RSS grew by {grown / MiB:.1f} MiB"
        # the threads that served them end (4 per websocket: werkzeug's, its reader, writer and pinger)
        wait_until(lambda: server.process.num_threads() <= threads, timeout=REAPED_WITHIN, what="threads back")
        # the authenticated connection may still send big messages (up to max_http_buffer_size)
        big_name = "n" * (2 * MiB)
        answer = warm.emit(events.LIST_ROOM, {"agent": "a1", "req_id": big_name, "office_id": "o1"})
        assert answer[0]["code"] == 400  # read and answered (the id is too long), not cut
    finally:
        close_all(sockets)
        warm.close()


def test_a_long_polling_post_before_authentication_closes_the_session_unread(server_process):
    server = server_process(key=KEY)
    with urllib.request.urlopen(server.url + "/socket.io/?EIO=4&transport=polling", timeout=IO_TIMEOUT) as opened:
        sid = json.loads(opened.read().decode().split("\x1e")[0][1:])["sid"]
    with contextlib.closing(tcp_connection(server.url)) as conn:
        head = f"POST /socket.io/?EIO=4&transport=polling&sid={sid} HTTP/1.1\r\nHost: x\r\nContent-Length: {BIG}\r\n\r\n"
        conn.sendall(head.encode() + b"4" * 65536)
        answer = conn.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    with contextlib.closing(tcp_connection(server.url)) as conn:
        conn.sendall(f"GET /socket.io/?EIO=4&transport=polling&sid={sid} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert conn.recv(65536).startswith(b"HTTP/1.1 400")  # the session is gone


def _connect_refused(ws: websocket.WebSocket, key: str) -> bool:
    """Send a namespace CONNECT with `key`; True when refused (CONNECT_ERROR), False
    when the Server closed the socket instead of answering."""
    try:
        ws.send(f"40{events.NAMESPACE}," + json.dumps({"token": key}))
        answer = ws.recv()
    except (OSError, websocket.WebSocketException):
        return False
    if not answer:  # a close frame
        return False
    assert answer.startswith(f"44{events.NAMESPACE},"), answer
    return True


def test_a_socket_is_closed_after_three_refused_keys(server_process):
    server = server_process(key=KEY, limits={"handshake_timeout": 60.0})  # not what closes it here
    ws = engineio_websocket(server.url, source="127.0.0.4")
    try:
        answered = [_connect_refused(ws, f"guess-{i}") for i in range(3)]
        assert answered[:2] == [True, True]  # the third is refused by closing the socket (its answer may not arrive)
        assert closed_by_server(ws, REAPED_WITHIN)
    finally:
        close_all([ws])


def test_guessing_keys_from_one_address_is_backed_off_and_logged_as_counts(server_process):
    server = server_process(key=KEY)
    refusals = 0
    for _ in range(30):  # ~10 sockets' worth of guesses, as fast as the Server answers
        try:
            ws = engineio_websocket(server.url, source="127.0.0.5")
        except websocket.WebSocketBadStatusException as refused:  # the address is backed off
            assert refused.status_code == 401
            refusals += 1
            continue
        try:
            answered = [_connect_refused(ws, "guess") for _ in range(3)]
        finally:
            close_all([ws])
        assert answered[:2] == [True, True]
        refusals += 3  # the third closed the socket, whether its answer arrived or not
    checked = server.state()["auth_checks"]
    other_address = RawSocket(server.url, auth={"token": KEY})  # from 127.0.0.1: not backed off
    other_address.close()
    log = server.stop()

    assert checked <= 10 + 3, checked  # the budget (10 a minute), then one check per backoff (1, 2, 4 s ...)
    counts = [int(n) for n in re.findall(r"refused (\d+) namespace connects from 127\.0\.0\.5 ", log)]
    assert 1 <= len(counts) <= 2, log  # one line per address per 10 s, not one per refusal
    assert sum(counts) == refusals, log
    assert "guess" not in log and KEY not in log


def test_a_socket_that_leaves_the_namespace_is_closed_at_the_handshake_deadline(server_process):
    server = server_process(limits={"handshake_timeout": 1.0})
    raw = RawSocket(server.url, auth={})
    try:
        raw._ws.send(f"41{events.NAMESPACE},")  # DISCONNECT from /smcp; the Engine.IO connection stays
        assert closed_by_server(raw._ws, REAPED_WITHIN)
    finally:
        raw.close()
