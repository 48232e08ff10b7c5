"""`BacklogQueue`: the bytes waiting for one client, and what a dropped client's queue keeps."""

from __future__ import annotations

import threading

from engineio import packet

from smcp_sync.server.limits.send_backlog import PACKET_OVERHEAD, BacklogQueue


def message(size: int) -> packet.Packet:
    return packet.Packet(packet.MESSAGE, data="x" * size)


def test_backlog_counts_the_bytes_put_and_not_yet_taken():
    queue = BacklogQueue()
    queue.put(message(1000))
    queue.put(message(24))
    queue.put(packet.Packet(packet.PING))
    assert queue.backlog == 1024 + 3 * PACKET_OVERHEAD
    assert queue.get().data == "x" * 1000
    assert queue.backlog == 24 + 2 * PACKET_OVERHEAD


def test_discard_drops_the_packets_keeps_the_end_marker_and_releases_join():
    queue = BacklogQueue()
    for _ in range(3):
        queue.put(message(10_000))
    queue.put(None)  # what Engine.IO's close puts: the writer's signal to stop
    queue.discard()
    assert queue.qsize() == 1 and queue.backlog == PACKET_OVERHEAD
    assert queue.get() is None
    queue.task_done()
    joined = threading.Thread(target=queue.join)
    joined.start()
    joined.join(5)
    assert not joined.is_alive()


def test_the_queue_is_idle_only_once_every_packet_taken_is_sent():
    """A message written at once must not overtake one the writer took and is still
    writing (`engine._CuttableWebSocket.send_at_once`)."""
    queue = BacklogQueue()
    assert queue.idle()
    queue.put(message(10))
    queue.put(message(20))
    assert not queue.idle()
    queue.get()
    queue.get()
    assert not queue.idle()  # empty, but both are still being written
    queue.sent()
    assert not queue.idle()
    queue.sent()
    assert queue.idle()
    queue.put(None)  # the end marker is never written: it does not count
    queue.get()
    assert queue.idle()


def test_what_long_polling_took_is_counted_off_once_the_session_is_on_its_websocket():
    """Polls take packets and write them in their answers, never calling `sent`: left
    counted, a session that began on long-polling was never `idle` after its upgrade."""
    queue = BacklogQueue()
    for size in (10, 20):
        queue.put(message(size))
        queue.get()  # a poll's
    assert not queue.idle()
    queue.polls_over()
    assert queue.idle()
    queue.put(message(30))
    queue.get()  # the writer's: counted until written
    assert not queue.idle()
    queue.sent()
    assert queue.idle()
