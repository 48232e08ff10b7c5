"""`Notifications`: `notify:*` events from the Server to the Agent's reactions and callbacks.

Each notification is handed to the dispatcher thread as received (the Socket.IO thread
does nothing else), then validated against its model there; an invalid one is logged
and dropped. For each valid one the Agent's built-in reaction runs first, then the
application's callbacks in registration order. The reaction only drops a leaving
Computer from the caches or asks the Agent's `Refresher` for a re-fetch; it never waits
for a peer, so no callback waits behind a slow Computer.

Ordering: python-socketio hands each incoming message to a new thread; the receiving
handler only enqueues, so notifications reach the dispatcher in arrival order unless a
handler thread is preempted before its first line (measured: no reordering among 3,000
back-to-back notifications while four threads made calls). The built-in reactions
re-read the Computer's state instead of trusting the order, so the caches converge on
the truth even then.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from .transport import AgentTransport
from ..protocol import events
from ..protocol.codec import from_wire
from ..protocol.errors import BadRequestError
from ..protocol.models import AgentCallData, EnterOfficeNotification, LeaveOfficeNotification, UpdateComputerConfigReq
from ..threads.forks import after_fork_in_child

logger = logging.getLogger(__name__)

#: The model each notification is validated with (and that callbacks receive).
NOTIFICATION_MODELS: dict[str, type] = {
    events.ENTER_OFFICE_NOTIFICATION: EnterOfficeNotification,
    events.LEAVE_OFFICE_NOTIFICATION: LeaveOfficeNotification,
    events.UPDATE_CONFIG_NOTIFICATION: UpdateComputerConfigReq,
    events.UPDATE_TOOL_LIST_NOTIFICATION: UpdateComputerConfigReq,
    events.UPDATE_DESKTOP_NOTIFICATION: UpdateComputerConfigReq,
    events.UPDATE_FINDER_NOTIFICATION: UpdateComputerConfigReq,
    events.UPDATE_SKILLS_NOTIFICATION: UpdateComputerConfigReq,
    events.CANCEL_TOOL_CALL_NOTIFICATION: AgentCallData,
}
assert set(NOTIFICATION_MODELS) == events.NOTIFY_EVENTS

Reaction = Callable[[str, Any], None]
#: ``dispatch(work, *args)``: queues work for the Agent's dispatcher thread (False once it is stopped).
Dispatch = Callable[..., bool]


class Notifications:
    def __init__(self, connection: AgentTransport, dispatch: Dispatch, reaction: Reaction):
        self._dispatch = dispatch
        self._reaction = reaction
        self._lock = threading.Lock()
        self._callbacks: dict[str, list[Callable[[Any], Any]]] = {event: [] for event in NOTIFICATION_MODELS}
        for event in NOTIFICATION_MODELS:
            connection.on(event, self._receiver(event))
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child (`threads.forks`): a fresh lock (the callbacks stay)."""
        self._lock = threading.Lock()

    def on(self, event: str, callback: Callable[[Any], Any]) -> None:
        if event not in NOTIFICATION_MODELS:
            raise ValueError(f"unknown notification {event!r}; expected one of {', '.join(sorted(NOTIFICATION_MODELS))}")
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        with self._lock:
            self._callbacks[event].append(callback)

    def _receiver(self, event: str) -> Callable[[Any], None]:
        def receive(payload: Any) -> None:
            if not self._dispatch(self._deliver, event, payload):
                logger.debug("dropped %s: the agent is closed", event)

        return receive

    def _deliver(self, event: str, payload: Any) -> None:
        try:
            notification: Any = from_wire(NOTIFICATION_MODELS[event], payload)
        except BadRequestError as exc:
            logger.warning("ignored an invalid %s: %s", event, exc.message)
            return
        try:
            self._reaction(event, notification)
        except Exception:
            logger.exception("built-in reaction to %s failed", event)
        with self._lock:
            callbacks = list(self._callbacks[event])
        for callback in callbacks:
            try:
                callback(notification)
            except Exception:
                logger.exception("%s callback %r failed", event, callback)
