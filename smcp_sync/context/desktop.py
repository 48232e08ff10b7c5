"""The Desktop organiser (spec/desktop.md, "Desktop 组织策略"): windows in, rendered list out.

Pure: the Computer gathers the windows (listing and reading `window://` resources) and
the tool-call history; this decides what the Agent sees and in which order. A window's
identity is the `Resource.uri` string its server listed, and that string is what gets
rendered.

Layout metadata (spec-0.3/desktop.md): `Window.priority` (the resource's
`annotations.priority`, in [0, 1]) and `Window.fullscreen` (its `_meta.fullscreen`).
When the resource does not declare them, the older query form that real window servers
still use is read: ``?priority=P`` (an integer in [0, 100]) counts as P / 100, so 80 and
0.8 sort alike, and ``?fullscreen=true``. Neither declared anywhere: 0 and not fullscreen.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Reversible

import attrs

from ..protocol.errors import BadRequestError
from ..protocol.models import Desktop, ResourceContents, TextResourceContents
from ..protocol.window_uri import WindowURI, parse_window_uri
from .server_order import CallRecord, order_servers

logger = logging.getLogger(__name__)


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class Window:
    """A `window://` resource of MCP server `server`, and the contents reading it returned."""

    server: str
    uri: str
    contents: tuple[ResourceContents, ...] = attrs.field(default=(), converter=_as_tuple)
    #: `annotations.priority` of the listed resource, in [0, 1] (None: not declared).
    priority: float | None = None
    #: `_meta.fullscreen` of the listed resource (None: not declared).
    fullscreen: bool | None = None


#: The query form's priority scale: [0, 100] maps onto the annotation's [0, 1].
QUERY_PRIORITY_SCALE = 100


@attrs.frozen
class _Candidate:
    index: int  # position in the input: "first fullscreen window" means the lowest one
    priority: float
    fullscreen: bool
    rendered: Desktop


def organize_desktop(
    windows: Iterable[Window], size: int | None, history: Reversible[CallRecord]
) -> list[Desktop]:
    """The desktop: windows filtered, grouped by server, ordered and cut to `size`.

    Servers come in tool-call-history order (`order_servers`); within a server, windows
    by priority descending (ties keep input order); a server with a fullscreen window
    shows only its first one (see the module docstring for where both come from).
    `size` None means no limit, `size <= 0` an empty desktop.
    """
    if size is not None and size <= 0:
        return []
    groups: dict[str, list[_Candidate]] = {}
    for index, window in enumerate(windows):
        candidate = _candidate(index, window)
        if candidate is not None:
            groups.setdefault(window.server, []).append(candidate)
    desktop: list[Desktop] = []
    for server in order_servers(groups, history):
        desktop += [c.rendered for c in _shown(groups[server])]
    return desktop if size is None else desktop[:size]


def _shown(candidates: list[_Candidate]) -> list[_Candidate]:
    """One server's windows in display order, after the fullscreen rule."""
    fullscreen = [c for c in candidates if c.fullscreen]
    if fullscreen:
        return [min(fullscreen, key=lambda c: c.index)]
    return sorted(candidates, key=lambda c: -c.priority)


def _candidate(index: int, window: Window) -> _Candidate | None:
    """The window ready to show, or None (with the reason logged) when it is skipped."""
    if not window.contents:
        logger.debug("desktop: skipping %s of %s: no contents", window.uri, window.server)
        return None
    texts = [c.text for c in window.contents if isinstance(c, TextResourceContents)]
    if len(texts) < len(window.contents):
        logger.warning(
            "desktop: %s of %s has non-text (blob) contents, which are not rendered", window.uri, window.server
        )
    if not texts:
        return None
    try:
        uri = parse_window_uri(window.uri)
    except BadRequestError as exc:
        logger.warning("desktop: skipping window of %s: %s", window.server, exc.message)
        return None
    body = "\n\n".join(text for text in texts if text)
    rendered = f"{window.uri}\n\n{body}" if body else window.uri
    return _Candidate(index, _priority(window, uri), _fullscreen(window, uri), rendered)


def _priority(window: Window, uri: WindowURI) -> float:
    if window.priority is not None:
        return window.priority
    return uri.priority / QUERY_PRIORITY_SCALE if uri.priority is not None else 0.0


def _fullscreen(window: Window, uri: WindowURI) -> bool:
    return window.fullscreen if window.fullscreen is not None else uri.fullscreen is True
