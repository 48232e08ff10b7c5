"""A wait on the main thread lets signal handlers run even when the operating system
delivered the signal to another thread (`threads.interruptible`)."""

from __future__ import annotations

import signal
import threading

import pytest

from smcp_sync.threads.interruptible import wait_event


class Interrupted(Exception):
    pass


def _raise(signum, frame):
    raise Interrupted(signum)


@pytest.mark.timeout(60)
def test_a_signal_delivered_to_another_thread_interrupts_the_main_threads_wait(no_leaks):
    """Without the wake-ups the main thread slept through it: the handler ran only when
    the hour-long wait ended (here: the test's timeout)."""
    assert threading.current_thread() is threading.main_thread()
    ready, done = threading.Event(), threading.Event()
    other = threading.Thread(target=lambda: (ready.set(), done.wait(30)), name="signal-receiver")
    previous = signal.signal(signal.SIGUSR1, _raise)
    other.start()
    try:
        assert ready.wait(10)
        sender = threading.Timer(0.2, lambda: signal.pthread_kill(other.ident, signal.SIGUSR1))
        with pytest.raises(Interrupted):
            sender.start()
            wait_event(threading.Event(), 3600)
        sender.join(10)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        done.set()
        other.join(10)


def test_the_wait_returns_when_the_event_is_set_or_times_out():
    event = threading.Event()
    assert wait_event(event, 0.01) is False
    event.set()
    assert wait_event(event, 3600) is True
    assert wait_event(threading.Event(), -1) is False
