"""Raw `socketio.Client`s playing Agent and Computer against a real Server.

A `Peer` records every `notify:*` it receives and lets a test wait for one (condition
variable, no sleeps) or check that none arrived.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterator

import socketio

from smcp_sync.protocol.events import NAMESPACE, NOTIFY_EVENTS

CALL_TIMEOUT = 5.0


class Peer:
    def __init__(
        self,
        url: str,
        *,
        auth: Any = None,
        transports: tuple[str, ...] = ("websocket",),
        query: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        """`query` is added to the connect URL (e.g. a Computer's extension announcement)."""
        self.client = socketio.Client(handle_sigint=False, reconnection=False)
        self._cond = threading.Condition()
        self.notices: list[tuple[str, Any]] = []
        for event in NOTIFY_EVENTS:
            self.client.on(event, self._recorder(event), namespace=NAMESPACE)
        self.client.connect(
            url + query, namespaces=[NAMESPACE], auth=auth, headers=headers or {}, transports=list(transports), wait_timeout=5
        )

    @property
    def sid(self) -> str:
        return self.client.get_sid(NAMESPACE)

    def call(self, event: str, *args: Any, timeout: float = CALL_TIMEOUT) -> Any:
        # A tuple is sent as that many arguments (so `call(e)` sends none, `call(e, None)` a null).
        return self.client.call(event, tuple(args), namespace=NAMESPACE, timeout=timeout)

    def join(self, role: str, name: str, office_id: str) -> Any:
        return self.call("server:join_office", {"role": role, "name": name, "office_id": office_id})

    def leave(self, office_id: str) -> Any:
        return self.call("server:leave_office", {"office_id": office_id})

    def answer(self, event: str, handler: Callable[[Any], Any]) -> None:
        """Play a Computer: answer `event` with `handler(payload)`."""
        self.client.on(event, handler, namespace=NAMESPACE)

    def wait_for(self, event: str, timeout: float = CALL_TIMEOUT, **fields: Any) -> Any:
        """The first recorded `event` whose payload has `fields`; waits for it."""

        def found() -> Any:
            for name, data in self.notices:
                if name == event and all(data.get(k) == v for k, v in fields.items()):
                    return data
            return None

        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None, timeout):
                raise AssertionError(f"no {event} {fields} within {timeout}s; got {self.notices}")
            return found()

    def wait_for_count(self, event: str, count: int, timeout: float = CALL_TIMEOUT) -> None:
        """Wait until `count` `event`s are recorded (or the timeout: the caller asserts on
        what arrived). Each event is handled on a client thread of its own, so the last one
        to arrive need not be the last one recorded."""
        with self._cond:
            self._cond.wait_for(lambda: sum(name == event for name, _ in self.notices) >= count, timeout)

    def wait_for_total(self, count: int, timeout: float) -> bool:
        """Wait until `count` notifications of any kind are recorded; whether they were."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.notices) >= count, timeout)

    def received(self, event: str | None = None) -> list[tuple[str, Any]]:
        with self._cond:
            return [(n, d) for n, d in self.notices if event is None or n == event]

    def assert_quiet(self, settle: float = 0.3) -> None:
        """No notification arrived, and none arrives within `settle` seconds (absence can
        only be observed for a while)."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self.notices), settle)
            assert not self.notices, f"unexpected notifications {self.notices}"

    def clear(self) -> None:
        with self._cond:
            self.notices.clear()

    def close(self) -> None:
        self.client.disconnect()

    def _recorder(self, event: str) -> Callable[[Any], None]:
        def record(data: Any = None) -> None:
            with self._cond:
                self.notices.append((event, data))
                self._cond.notify_all()

        return record


def wait_until(predicate: Callable[[], bool], timeout: float = CALL_TIMEOUT, interval: float = 0.01) -> None:
    """For state with no event to wait on (e.g. the Server's registry after a disconnect)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


@contextlib.contextmanager
def echo_office(url: str) -> Iterator[Callable[[str], Any]]:
    """Office "office-1": a Computer c1 whose tool echoes `params["x"]`, and an Agent a1;
    yields a1's tool call of it (a text in, the answer out)."""
    computer, agent = peers = [Peer(url) for _ in range(2)]
    try:
        assert computer.join("computer", "c1", "office-1") == (True, None)
        assert agent.join("agent", "a1", "office-1") == (True, None)
        computer.answer("client:tool_call", lambda data: {"content": [{"type": "text", "text": data["params"]["x"]}]})

        def call(text: str) -> Any:
            call = {"agent": "a1", "req_id": text, "computer": "c1", "tool_name": "echo", "params": {"x": text}, "timeout": 5}
            return agent.call("client:tool_call", call, timeout=5)

        yield call
    finally:
        for peer in peers:
            peer.client.disconnect()
