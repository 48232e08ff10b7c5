"""`OperatorView`: what `Observability` turns on for one `SMCPServer`, wired to it."""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..handlers.membership import MembershipWatcher
from ..offices.office_rules import Session
from ..offices.registry import OfficeRegistry
from .admin import AdminInstrumentation
from .audit import AuditTrail
from .endpoints import OperatorEndpoints, WSGIApp, answering, json_response
from .health import Health
from .options import Observability
from .requests import Handler, RequestObserver

logger = logging.getLogger(__name__)

METRICS_HINT = "GET /metrics needs the 'metrics' extra (prometheus_client): pip install 'smcp_sync[metrics]'\n"
_NO_METRICS = answering(lambda: (501, "text/plain; charset=utf-8", METRICS_HINT.encode()))


class OperatorView:
    """`pending` counts the forwarded requests not answered yet; `accepting` says whether
    the Server takes connections (not stopped)."""

    def __init__(
        self,
        options: Observability,
        sio: Any,
        registry: OfficeRegistry,
        pending: Callable[[], int],
        accepting: Callable[[], bool],
    ) -> None:
        self.options = options
        self.health = Health(registry, accepting)
        self.metrics = _server_metrics(sio, registry, pending) if options.metrics else None
        self.audit = AuditTrail(options.audit, registry) if options.audit is not None else None
        self._requests = RequestObserver(self.metrics, self.audit, options.tracing)
        watchers = [w for w in (self.metrics, self.audit) if w is not None]
        #: Told of every membership change (`Membership`).
        self.watcher: MembershipWatcher = _Watchers(watchers) if watchers else MembershipWatcher()
        #: Told of every notification fanned out (`Offices`), or None.
        self.fanned_out: Callable[[str], None] | None = self.metrics.fanned_out if self.metrics is not None else None
        if self.metrics is not None:
            registry.observer = self.metrics
            sio.refused_busy = self.metrics.refused_busy
            sio.eio.message_received, sio.eio.message_sent = self.metrics.received, self.metrics.sent
            sio.auth_failures.refused_backed_off = self.metrics.refused_backed_off
        self.admin = AdminInstrumentation(sio, options.admin) if options.admin is not None else None

    def stopping(self) -> None:
        """The Server is stopping: background work ends (`close` waits for it)."""
        if self.admin is not None:
            self.admin.stopping()

    def close(self, timeout: float) -> None:
        if self.admin is not None:
            self.admin.close(timeout)

    def observe(self, event: str, handler: Handler) -> Handler:
        return self._requests.observe(event, handler)

    def endpoints(self, app: WSGIApp) -> WSGIApp:
        """`app` behind the operator's paths (unchanged when there are none)."""
        routes: dict[str, WSGIApp] = {}
        if self.options.health:
            routes["/health/live"] = answering(lambda: json_response(*self.health.live()))
            routes["/health/ready"] = answering(lambda: json_response(*self.health.ready()))
        if self.options.metrics:
            routes["/metrics"] = self.metrics.wsgi_app if self.metrics is not None else _NO_METRICS
        return OperatorEndpoints(app, routes) if routes else app


def _server_metrics(sio: Any, registry: OfficeRegistry, pending: Callable[[], int]) -> Any:
    """A `metrics.ServerMetrics`, or None without prometheus_client (logged once)."""
    try:
        from .metrics import ServerMetrics
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != "prometheus_client":
            raise
        logger.info("no metrics: %s", METRICS_HINT.strip())
        return None
    return ServerMetrics(sio, registry, pending)


class _Watchers(MembershipWatcher):
    def __init__(self, watchers: list[MembershipWatcher]) -> None:
        self._watchers = watchers

    def joined(self, member: Session) -> None:
        for watcher in self._watchers:
            watcher.joined(member)

    def left(self, member: Session, reason: str) -> None:
        for watcher in self._watchers:
            watcher.left(member, reason)

    def auth_failed(self, address: str) -> None:
        for watcher in self._watchers:
            watcher.auth_failed(address)
