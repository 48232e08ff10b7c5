"""The Desktop (spec/desktop.md): the `window://` resource channel and what an Agent gets
for `client:get_desktop`.

A window's value is the contents of reading its listed URI, cached while the Computer is
subscribed to it and read in the background as soon as it is listed (a desktop asked for
before then waits at most `wait` seconds, then shows what is read, and
`server:update_desktop` follows). Laying windows out is `organize_desktop`'s job; this
gathers them, with the layout each window's listing declares (`window_layout`).
"""

from __future__ import annotations

from typing import Reversible, Sequence

from ...context.desktop import Window, organize_desktop
from ...context.server_order import CallRecord
from ...protocol import events
from ...protocol.errors import BadRequestError
from ...protocol.models import Desktop, ResourceContents
from ...protocol.window_uri import SCHEME, parse_window_uri
from ..mcp.manager import ServerManager
from .channel import Entry, ResourceChannel
from .window_layout import WindowLayout, WindowLayouts

WindowContents = tuple[ResourceContents, ...]


class DesktopWindows:
    """The Desktop: the `window://` channel of the MCP servers' windows, and the desktop an
    Agent is shown of them."""

    def __init__(self, manager: ServerManager, timeout: float, wait: float) -> None:
        """`timeout`: per MCP request; `wait`: how long a reader waits for the warm-up."""
        self.channel: ResourceChannel[WindowContents] = ResourceChannel(
            "desktop",
            SCHEME,
            events.UPDATE_DESKTOP,
            read=lambda server, uris: manager.read_resources(server, uris, timeout),
            check=parse_window_uri,  # a window the organiser would drop is not worth a read
            value_of=lambda server, contents: tuple(contents),
            wait=wait,
            survey=WindowLayouts().survey,
        )

    def windows(
        self,
        servers: Sequence[str],
        history: Reversible[CallRecord],
        size: int | None = None,
        window: str | None = None,
    ) -> list[Desktop]:
        """The rendered desktop: at most `size` windows (None: all; <= 0: none). `window`
        asks for that one window only (the exact URI its server lists; unlisted: an empty
        desktop)."""
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise BadRequestError(
                f"desktop_size must be an integer or null, got {size!r}", details={"field": "desktop_size"}
            )
        if window is not None:
            parse_window_uri(window)  # 400 naming the broken rule
        if size is not None and size <= 0:
            return []
        windows = [_window(entry) for entry in self.channel.entries(servers, window).entries]
        return organize_desktop(windows, size, history)


def _window(entry: Entry) -> Window:
    layout = entry.details if isinstance(entry.details, WindowLayout) else WindowLayout()
    return Window(
        server=entry.server, uri=entry.uri, contents=entry.value, priority=layout.priority, fullscreen=layout.fullscreen
    )
