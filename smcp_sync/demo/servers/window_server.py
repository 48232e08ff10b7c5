"""An MCP server (stdio) with a few Desktop ``window://`` windows, one of them live.

    python -m smcp_sync.demo.servers.window_server [--interval 2] [--host-id com.example.desktop]
                                                   [--fullscreen monitor|browser|editor|terminal|none]
                                                   [--metadata query|annotations]

What it offers (spec/desktop.md, "MCP Server 实现指南"):

* capabilities ``resources.subscribe`` and ``resources.listChanged``;
* four windows, each ``text/plain``, with ``priority`` in the URI query (the older form
  real window servers use, the default) or, with ``--metadata annotations``, as
  ``annotations.priority`` / 100 of a query-less URI (spec-0.3/desktop.md):

  ============  ========  ===================================================
  window        priority  content
  ============  ========  ===================================================
  ``browser``   80        a documentation page open in a browser tab
  ``editor``    60        a Markdown file open in an editor
  ``terminal``  40        the tail of a test run
  ``monitor``   20        a system monitor that changes every ``--interval``
  ============  ========  ===================================================

* one window (``--fullscreen``, default ``monitor``) also carries ``fullscreen=true``
  (``_meta.fullscreen`` with ``--metadata annotations``), so a Desktop shows only it for
  this server; ``--fullscreen none`` shows them all by
  priority. The live window is the default fullscreen one so that what the Desktop
  shows is what keeps changing.
* every ``--interval`` seconds the monitor's content changes (its tick count and clock)
  and ``notifications/resources/updated`` goes to the clients subscribed to its URI.
  The rest of its content is a deterministic function of the tick, so tests can check it.
* reading an unknown URI is MCP error -32002 (resource not found).
"""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import datetime, timezone
from typing import Any, Callable

import anyio
import attrs
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from .notifying_server import RESOURCE_NOT_FOUND, NotifyingServer, run_stdio
from smcp_sync import __version__
from smcp_sync.protocol.errors import SMCPError
from smcp_sync.protocol.window_uri import WindowURI

Ctx = ServerRequestContext[Any, Any]

BROWSER_PAGE = """\
Quickstart — smcp_sync documentation
https://docs.example.com/smcp-sync/quickstart

1. Start a server:   smcp-sync server --port 8000
2. Start a computer: smcp-sync computer --config computer.json
3. Ask an agent:     smcp-sync agent tools --office demo"""

EDITOR_BUFFER = """\
notes/todo.md — line 3, column 12
# This week
- [x] Finder: serve CSV tables
- [ ] Desktop: show the fullscreen window first
- [ ] Write the release notes"""

TERMINAL_TAIL = """\
$ pytest tests/examples -q
........................                                  [100%]
24 passed in 9.81s"""


@attrs.frozen
class Window:
    name: str
    title: str
    priority: int
    content: Callable[[int], str]  # tick → text


def monitor_text(tick: int, now: datetime | None = None) -> str:
    """The monitor window at `tick` (the clock line is the only non-deterministic part)."""
    now = now or datetime.now(timezone.utc)
    cpu, memory = 12 + (tick * 7) % 60, 2048 + (tick * 37) % 512
    return f"System monitor — tick {tick}\nclock {now:%H:%M:%S} UTC\nCPU {cpu}% · memory {memory} MiB"


WINDOWS = (
    Window("browser", "Browser — quickstart page", 80, lambda tick: BROWSER_PAGE),
    Window("editor", "Editor — notes/todo.md", 60, lambda tick: EDITOR_BUFFER),
    Window("terminal", "Terminal — test run", 40, lambda tick: TERMINAL_TAIL),
    Window("monitor", "System monitor", 20, monitor_text),
)
LIVE_WINDOW = "monitor"


def window_uri(host: str, window: Window, fullscreen: bool, in_query: bool = True) -> str:
    """``window://{host}/{name}?priority=P`` (+ ``&fullscreen=true``), or without the query
    when the layout is declared in the listing: the window's identity."""
    if not in_query:
        return WindowURI(host=host, path=(window.name,)).build()
    return WindowURI(host=host, path=(window.name,), priority=window.priority, fullscreen=fullscreen or None).build()


class WindowServer(NotifyingServer):
    def __init__(self, host: str, fullscreen: str | None, metadata: str = "query") -> None:
        super().__init__(
            "windows", version=__version__, on_list_resources=self._list_resources, on_read_resource=self._read_resource
        )
        self.tick = 0
        self.fullscreen = fullscreen
        self.annotated = metadata == "annotations"
        self.uris = {w.name: window_uri(host, w, w.name == fullscreen, not self.annotated) for w in WINDOWS}

    async def tick_forever(self, interval: float) -> None:
        """Change the live window every `interval` seconds and tell its subscribers."""
        live_uri = self.uris[LIVE_WINDOW]
        while True:
            await anyio.sleep(interval)
            self.tick += 1
            await self.notify_updated(lambda uri: uri == live_uri)

    def check_subscription(self, uri: str) -> None:
        self._window(uri)

    def _window(self, uri: str) -> Window:
        window = next((w for w in WINDOWS if self.uris[w.name] == uri), None)
        if window is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"no window {uri!r}; this server has {sorted(self.uris.values())}")
        return window

    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                uri=self.uris[w.name], name=w.name, title=w.title, mime_type="text/plain", **self._layout(w)
            )
            for w in WINDOWS
        ]
        return types.ListResourcesResult(resources=resources)

    def _layout(self, window: Window) -> dict[str, Any]:
        """The window's layout as the listing declares it (nothing in the query form)."""
        if not self.annotated:
            return {}
        layout: dict[str, Any] = {
            "annotations": types.Annotations(priority=window.priority / 100, audience=["assistant"])
        }
        if window.name == self.fullscreen:
            layout["meta"] = {"fullscreen": True}
        return layout

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        window = self._window(params.uri)
        text = window.content(self.tick)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type="text/plain", text=text)]
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between two monitor updates")
    parser.add_argument("--host-id", default="com.example.desktop", help="window:// host of the URIs")
    parser.add_argument("--fullscreen", choices=[w.name for w in WINDOWS] + ["none"], default=LIVE_WINDOW)
    parser.add_argument(
        "--metadata",
        choices=["query", "annotations"],
        default="query",
        help="where priority and fullscreen go: the URI query (older form) or annotations / _meta",
    )
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error("--interval must be positive")
    try:
        WindowURI(host=args.host_id)
    except SMCPError as exc:
        parser.error(f"--host-id: {exc.message}")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(levelname)s: %(message)s")
    server = WindowServer(args.host_id, None if args.fullscreen == "none" else args.fullscreen, args.metadata)
    run_stdio(server, lambda: server.tick_forever(args.interval))


if __name__ == "__main__":
    main()
