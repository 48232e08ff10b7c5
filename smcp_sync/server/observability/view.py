"""`OperatorView`: what `Observability` turns on for one `SMCPServer`, wired to it."""

from __future__ import annotations

from typing import Any, Callable

from ..registry import OfficeRegistry
from .endpoints import OperatorEndpoints, Response, WSGIApp, json_response
from .health import Health
from .options import Observability


class OperatorView:
    def __init__(self, options: Observability, sio: Any, registry: OfficeRegistry, accepting: Callable[[], bool]) -> None:
        self.options = options
        self.health = Health(registry, accepting)

    def endpoints(self, app: WSGIApp) -> WSGIApp:
        """`app` behind the operator's paths (unchanged when there are none)."""
        routes: dict[str, Callable[[], Response]] = {}
        if self.options.health:
            routes["/health/live"] = lambda: json_response(*self.health.live())
            routes["/health/ready"] = lambda: json_response(*self.health.ready())
        return OperatorEndpoints(app, routes) if routes else app
