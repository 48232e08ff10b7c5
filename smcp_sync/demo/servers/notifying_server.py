"""A low-level MCP server that declares ``resources.subscribe`` and ``resources.listChanged``
and can notify its client at any moment, not only while answering a request; and the
stdio runner that serves it next to its background tasks (folder watcher, window ticker).

Why the low-level ``Server``: a Computer only enumerates and subscribes to servers that
declare ``resources.subscribe``, and mcp's ``MCPServer`` declares it False. The SDK
declares it once ``on_subscribe_resource`` is registered, and ``listChanged`` only when
``create_initialization_options`` gets ``NotificationOptions(resources_changed=True)``
(overridden here, so every transport gets it).

Why the client is remembered at ``notifications/initialized``: a change found by a
background task has no request context to reach the client through, and the client may
not have sent any request yet. mcp hands each request a new ``ServerSession`` object,
but every one of them sends connection-level notifications on the same connection, so
the latest one is kept. These servers run over stdio: one process, one client. (An HTTP
server with many clients would key them by connection, as tests/mcp_servers/_peers.py
does.) ``resources/list_changed`` always goes out; ``resources/updated`` only for URIs
the client subscribed to (MCP spec). After a failed send the client is forgotten.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Coroutine

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

log = logging.getLogger(__name__)

Ctx = ServerRequestContext[Any, Any]
#: MCP's "resource not found" of the handshake-era spec revisions (2026-07-28 retires it
#: for -32602; clients that matter here negotiate the handshake era).
RESOURCE_NOT_FOUND = -32002
BackgroundTask = Callable[[], Coroutine[Any, Any, None]]


class NotifyingServer(Server[Any]):
    def __init__(self, name: str, *, version: str, **handlers: Any) -> None:
        super().__init__(
            name,
            version=version,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            **handlers,
        )
        self.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        self._client: ServerSession | None = None
        self._subscribed: set[str] = set()

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), *args, **kwargs
        )

    def check_subscription(self, uri: str) -> None:
        """Raise an `MCPError` when `uri` cannot be subscribed to (subclasses say when)."""

    async def notify_list_changed(self) -> None:
        await self._send(types.ResourceListChangedNotification())

    async def notify_updated(self, affected: Callable[[str], bool]) -> None:
        """``resources/updated`` for every subscribed URI for which `affected(uri)` holds."""
        for uri in sorted(u for u in self._subscribed if affected(u)):
            await self._send(types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri)))

    async def _initialized(self, ctx: Ctx, params: types.NotificationParams) -> None:
        self._client = ctx.session

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.check_subscription(params.uri)
        self._client = ctx.session
        self._subscribed.add(params.uri)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self._subscribed.discard(params.uri)
        return types.EmptyResult()

    async def _send(self, notification: types.ServerNotification) -> None:
        if self._client is None:
            return
        try:
            await self._client.send_notification(notification)
        except Exception:  # the client went away: stop notifying, keep serving
            log.info("forgetting the client after a failed %s", notification.method, exc_info=True)
            self._client = None


def run_stdio(server: Server[Any], *background: BackgroundTask) -> None:
    """Serve `server` on stdin/stdout until stdin closes, running `background` tasks
    alongside; they are cancelled when the client goes away."""
    anyio.run(_serve_stdio, server, background)


async def _serve_stdio(server: Server[Any], background: tuple[BackgroundTask, ...]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        async with anyio.create_task_group() as tasks:
            for task in background:
                tasks.start_soon(task)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()
