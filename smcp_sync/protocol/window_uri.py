"""`window://` URIs of the Desktop (spec/desktop.md): parse, validate, build.

``window://host/seg1/seg2?priority=P&fullscreen=F`` — `host` is the MCP server id, each
path segment is percent-decoded on its own (``c%2Fd`` is the one segment ``c/d``),
`priority` is an integer in [0, 100] and `fullscreen` one of true/1/yes/on or
false/0/no/off (case-insensitive). Real window servers put both in the query (docs/ARCHITECTURE.md, Wire decisions);
protocol 0.2+ moved them to the listed resource's `annotations.priority` ([0, 1]) and
`_meta.fullscreen`, which the Desktop prefers, reading the query only where those say
nothing, priority as P / 100 (`smcp_sync.context.desktop`).

Errors: the spec gives invalid window URIs no code of their own (4204 is the Finder's
"Invalid DPE URI"), so every failure is a `BadRequestError` (400) whose message names the
rule broken (the spec's numbered rules, or the shared syntax of `_uri_syntax`) and the
offending value. Query parameters other than `priority` and `fullscreen` are ignored
(not refused): a window must not vanish from the desktop because its server adds a
parameter of its own; `build()` leaves them out. A parsed URI is a view for layout: the
identity of a window stays the listed `Resource.uri` string, not the rebuilt one.
"""

from __future__ import annotations

from typing import Any

import attrs

from . import _uri_syntax as syntax
from .errors import BadRequestError

SCHEME = "window"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_PARAMS = ("priority", "fullscreen")


def _segments(value: Any) -> Any:
    """Lists become tuples (hashable, immutable); anything else is left for `_check` to refuse."""
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class WindowURI:
    """A validated window URI. `priority` / `fullscreen` are None when the URI leaves them
    out (layout then uses 0 and not-fullscreen)."""

    host: str
    path: tuple[str, ...] = attrs.field(default=(), converter=_segments)
    priority: int | None = None
    fullscreen: bool | None = None

    def __attrs_post_init__(self) -> None:
        with syntax.reporting(BadRequestError, SCHEME):
            _check(self.host, self.path, self.priority, self.fullscreen)

    def build(self) -> str:
        path = "".join("/" + syntax.encode(segment) for segment in self.path)
        fullscreen = None if self.fullscreen is None else str(self.fullscreen).lower()
        return f"{SCHEME}://{self.host}{path}" + syntax.build_query(
            {"priority": self.priority, "fullscreen": fullscreen}
        )

    def __str__(self) -> str:
        return self.build()


def _check(host: Any, path: Any, priority: Any, fullscreen: Any) -> None:
    syntax.check_host(host)
    if not isinstance(path, tuple):
        raise syntax.RuleBroken(f"rule 5: path must be a list or tuple of segments, got {path!r}")
    for segment in path:
        syntax.check_text(segment, "rule 5: path segment")
    if priority is not None:
        syntax.check_int(priority, "rule 3: priority", 0, 100)
    if fullscreen is not None and not isinstance(fullscreen, bool):
        raise syntax.RuleBroken(f"rule 4: fullscreen must be a bool, got {fullscreen!r}")


def parse_window_uri(text: str) -> WindowURI:
    """The `WindowURI` of `text`; raises `BadRequestError` (400) naming the broken rule."""
    with syntax.reporting(BadRequestError, SCHEME, text):
        host, segments, query = syntax.split(text, SCHEME)
        params = syntax.known_params(query, _PARAMS, strict=False)
        priority = params.get("priority")
        return WindowURI(
            host=host,
            path=tuple(segments),
            priority=None if priority is None else syntax.parse_int(priority, "rule 3: priority", 0, 100),
            fullscreen=_parse_bool(params.get("fullscreen")),
        )


def _parse_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    word = value.lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise syntax.RuleBroken(f"rule 4: fullscreen must be one of true/1/yes/on or false/0/no/off, got {value!r}")


def is_window_uri(text: object) -> bool:
    """Whether `text` is a valid window URI (any object; never raises)."""
    try:
        parse_window_uri(text)  # type: ignore[arg-type]
    except BadRequestError:
        return False
    return True
