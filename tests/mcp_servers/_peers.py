"""Which clients are connected to this server process, what they subscribed to, and fan-out.

Why: a change made through one connection (a tool call) must be announced to every
connection of the process (several clients can share one HTTP server), and
``resources/updated`` must only go to connections that subscribed to the URI.

Delivery detail that matters on streamable HTTP: a notification sent on the
*standalone* channel travels on the client's GET stream, and is silently dropped by the
SDK if that stream is not open yet (the client opens it in the background after
``initialize``).  So the connection that made the call gets its notification
*request-scoped* (``related_request_id``), which rides the response of its own POST and
cannot be lost; other connections get it on their standalone channel.

Connections are told apart by what the transport attaches to each request: the
``mcp-session-id`` header (streamable HTTP), the ``session_id`` query parameter (SSE),
or nothing at all (stdio: one connection per process).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession

log = logging.getLogger(__name__)


def connection_key(ctx: ServerRequestContext[Any, Any]) -> str:
    request = ctx.request
    if request is None:
        return "stdio"
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    if session_id:
        return f"streamable:{session_id}"
    query = getattr(request, "query_params", None)
    session_id = query.get("session_id") if query is not None else None
    if session_id:
        return f"sse:{session_id}"
    return "http:unknown"


class Peers:
    def __init__(self) -> None:
        self._sessions: dict[str, ServerSession] = {}
        self._subscriptions: dict[str, set[str]] = {}

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """Remember the connection behind ``ctx`` (its session outlives the request)."""
        key = connection_key(ctx)
        self._sessions[key] = ctx.session
        return key

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        self._subscriptions.setdefault(self.seen(ctx), set()).add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        self._subscriptions.get(self.seen(ctx), set()).discard(uri)

    async def notify(
        self,
        ctx: ServerRequestContext[Any, Any],
        notification: types.ServerNotification,
        *,
        subscribed_to: str | None = None,
    ) -> int:
        """Send ``notification`` to every known connection; return how many were sent.

        With ``subscribed_to``, only connections subscribed to that URI receive it.
        """
        caller = self.seen(ctx)
        sent = 0
        for key, session in list(self._sessions.items()):
            if subscribed_to is not None and subscribed_to not in self._subscriptions.get(key, ()):
                continue
            try:
                if key == caller:
                    await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
                else:
                    await session.send_notification(notification)
                sent += 1
            except Exception:  # a vanished peer must not fail the caller's request
                log.info("dropping connection %s after a failed notification", key, exc_info=True)
                self._sessions.pop(key, None)
                self._subscriptions.pop(key, None)
        return sent
