"""What a listed `window://` resource says about its own layout (spec-0.3/desktop.md,
"Window 资源元数据"): `annotations.priority` (a number in [0, 1]) and `_meta.fullscreen`
(a bool), read once per listing, not per `get_desktop`.

Problems are warned about once per MCP server and kind, not per listing or request: a
priority outside [0, 1] counts as 0, a fullscreen that is not a bool as false, an
`audience` without "assistant" is kept (the spec's v0.2 rule), and window URIs in the
older query form (``?priority=&fullscreen=``, which real window servers still list) are
accepted: the organiser reads the query where the annotations say nothing (`context.desktop`).

A window host listed by two MCP servers is warned about when the second lists it
(spec-0.3/desktop.md: hosts SHOULD be unique across servers, a clash is warned at
registration, not refused), once per host and pair of servers; the windows are still
grouped by bundle_id and shown.
"""

from __future__ import annotations

import logging
import threading
from typing import Sequence
from urllib.parse import urlsplit

import attrs

from ...context.desktop import QUERY_PRIORITY_SCALE
from ...protocol.models import Resource

log = logging.getLogger(__name__)


@attrs.frozen
class WindowLayout:
    #: In [0, 1]; None when the resource declares none.
    priority: float | None = None
    #: None when the resource declares none.
    fullscreen: bool | None = None


class WindowLayouts:
    """`describe` of the Desktop channel: a listed window's `WindowLayout`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()
        self._hosts: dict[str, frozenset[str]] = {}  # server -> the window hosts it listed last
        self._clashes: set[tuple[str, frozenset[str]]] = set()

    def survey(self, server: str, windows: Sequence[Resource]) -> dict[str, WindowLayout]:
        """`survey` of the Desktop channel: each listed window's layout, and the host clash
        warning."""
        hosts = frozenset(urlsplit(window.uri).netloc for window in windows)
        with self._lock:
            self._hosts[server] = hosts
            clashes = [
                (host, other)
                for other, listed in self._hosts.items()
                if other != server
                for host in sorted(hosts & listed)
                if (host, frozenset((server, other))) not in self._clashes
            ]
            self._clashes.update((host, frozenset((server, other))) for host, other in clashes)
        for host, other in clashes:
            log.warning(
                "desktop: MCP servers %r and %r both list windows of host %r (hosts should be unique across "
                "servers); each server's windows are still shown as its own",
                *sorted((other, server)), host,
            )  # fmt: skip
        return {window.uri: self(server, window) for window in windows}

    def __call__(self, server: str, resource: Resource) -> WindowLayout:
        annotations = resource.annotations
        priority = annotations.priority if annotations is not None else None
        uri = resource.uri
        if priority is not None and not 0.0 <= priority <= 1.0:
            self._warn(server, "priority", "annotations.priority %r of %s is not in [0, 1]; 0 is used", priority, uri)
            priority = 0.0
        fullscreen = (resource.meta or {}).get("fullscreen")
        if fullscreen is not None and not isinstance(fullscreen, bool):
            self._warn(server, "fullscreen", "_meta.fullscreen %r of %s is no bool; false is used", fullscreen, uri)
            fullscreen = False
        audience = annotations.audience if annotations is not None else None
        if audience is not None and "assistant" not in audience:
            self._warn(server, "audience", "%s is for %s, not the assistant; shown all the same", uri, audience)
        if urlsplit(uri).query:
            self._warn(
                server,
                "query",
                "lists window URIs with a query (e.g. %s): the older form; its priority (0-%d) and fullscreen "
                "are read where annotations.priority and _meta.fullscreen say nothing",
                uri,
                QUERY_PRIORITY_SCALE,
            )
        return WindowLayout(priority=priority, fullscreen=fullscreen)

    def _warn(self, server: str, kind: str, message: str, *args: object) -> None:
        with self._lock:
            if (server, kind) in self._warned:
                return
            self._warned.add((server, kind))
        log.warning("desktop: MCP server %r " + message, server, *args)
