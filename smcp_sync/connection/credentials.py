"""The Socket.IO auth a client presents: a fixed dict, or a callable asked again at every
connect and reconnect.

Why a callable: a token that rotates or expires while the client runs would be refused
on every reconnect if the dict were copied once (docs/wire/handshake-and-auth.md,
*Credentials that change*).
python-socketio calls it when the websocket is open, before it sends the namespace
CONNECT; a callable that fails there must neither kill that thread nor leave the connect
waiting for a CONNECT that never goes out, so its failure sends no credentials (a Server
that needs them refuses) and is kept for `connect` to report. What it returns and what
it raises never reach a log line (only the exception's type does).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Callable, Mapping, Union

logger = logging.getLogger(__name__)

#: What `auth=` accepts: the auth dict, a callable returning it, or None (no auth).
AuthSource = Union[Mapping[str, Any], Callable[[], Mapping[str, Any]], None]


class ConnectAuth:
    """The auth of one client (`owner` names it in log lines)."""

    def __init__(self, source: AuthSource, owner: str) -> None:
        if source is not None and not isinstance(source, Mapping) and not callable(source):
            raise TypeError(
                f"auth must be the Socket.IO auth dict, a callable returning it, or None, not {type(source).__name__}"
            )
        self._source = source
        self._owner = owner
        #: Why the callable gave no auth at its last call (None when it did).
        self.failure: str | None = None

    def for_client(self) -> Any:
        """What `socketio.Client.connect(auth=...)` gets: a copy of the dict, or a callable
        it evaluates at each connect and reconnect."""
        if self._source is None or isinstance(self._source, Mapping):
            return None if self._source is None else dict(self._source)
        return self._evaluate

    def _evaluate(self) -> dict[str, Any]:
        assert callable(self._source)
        try:
            value: Any = self._source()
        except Exception as exc:
            return self._failed(f"the auth callable raised {type(exc).__name__}")
        if inspect.isawaitable(value):
            getattr(value, "close", lambda: None)()  # no "never awaited" warning
            return self._failed("the auth callable returned an awaitable; it must return the auth dict itself")
        if not isinstance(value, Mapping):
            return self._failed(f"the auth callable returned {type(value).__name__}, not the auth dict")
        self.failure = None
        return dict(value)

    def _failed(self, reason: str) -> dict[str, Any]:
        self.failure = reason
        logger.warning("%s: %s; connecting without credentials", self._owner, reason)
        return {}
