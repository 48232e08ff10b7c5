"""The Server's Prometheus metrics (the `metrics` extra: prometheus_client), one
`CollectorRegistry` per `SMCPServer`: two Servers in one process never mix, and under
gunicorn each worker serves its own. Counted where things happen (requests, joins,
notifications, the Redis registry's recoveries); levels (sessions, threads, queue) are
read when scraped, so they cost nothing in between. Labels are bounded: events, roles,
outcome codes (`outcome`), never an office, a name or an argument.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ...protocol import events
from ..handlers.membership import MembershipWatcher
from ..offices.office_rules import Session
from ..offices.registry import OfficeRegistry

#: Seconds: from a loopback round trip to the longest tool calls.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
#: The events a Server handles: the only event names used as labels.
_HANDLED = events.CLIENT_EVENTS | events.SERVER_EVENTS
#: Seconds: a Redis round trip, up to its timeout.
LOOKUP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


class ServerMetrics(MembershipWatcher):
    """The metrics of one Server; `sio` and `pending` are read at scrape time."""

    def __init__(self, sio: Any, registry: OfficeRegistry, pending: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._requests = Counter(
            "smcp_requests", "Requests answered, by event and outcome (ok or the SMCP error code)", ["event", "code"], registry=r
        )
        self._durations = Histogram(
            "smcp_request_duration_seconds",
            "Seconds from a request's arrival to its answer (routed ones: the Computer's answer relayed)",
            ["event"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._joins = Counter("smcp_office_joins", "Sessions that entered an office, by role", ["role"], registry=r)
        self._leaves = Counter(
            "smcp_office_leaves", "Sessions that left an office, by role and how (left, moved, disconnected, purged)",
            ["role", "reason"], registry=r,
        )  # fmt: skip
        self._notifications = Counter(
            "smcp_notifications", "Notifications fanned out to an office, by event", ["event"], registry=r
        )
        self._auth_failures = Counter("smcp_auth_failures", "Connections whose credentials were refused", registry=r)
        self._backed_off = Counter(
            "smcp_auth_backoff_refusals",
            "Connections and namespace connects refused unchecked: their address is backed off after failed authentications",
            registry=r,
        )
        self._lookups = Histogram(
            "smcp_registry_lookup_duration_seconds",
            "Seconds to find a member of another Server process in Redis",
            buckets=LOOKUP_BUCKETS,
            registry=r,
        )
        self._epoch_changes = Counter(
            "smcp_registry_epoch_changes", "Times Redis lost this node's records and it began writing them back", registry=r
        )
        self._write_backs = Counter(
            "smcp_registry_write_backs", "Members written back to Redis, by outcome (written, refused)", ["outcome"], registry=r
        )
        self._purged = Counter("smcp_registry_purged_members", "Members of dead Server nodes purged by this one", registry=r)
        #: `inc(size)` of each message received and sent, for the Engine.IO server (`view`).
        self.received = Counter(
            "smcp_received_bytes", "Bytes of the Socket.IO packets received (Engine.IO messages: no framing, no pings)",
            registry=r,
        ).inc  # fmt: skip
        self.sent = Counter(
            "smcp_sent_bytes", "Bytes of the Socket.IO packets sent to clients (Engine.IO messages: no framing, no pings)",
            registry=r,
        ).inc  # fmt: skip
        self._answers: dict[tuple[str, str], tuple[Any, Any]] = {}
        r.register(_Levels(sio, registry, pending))
        #: ``GET /metrics``: prometheus_client's app (the format the scraper asks for).
        self.wsgi_app = make_wsgi_app(r)

    def answered(self, event: str, code: str, seconds: float) -> None:
        counted = self._answers.get((event, code))
        if counted is None:  # prometheus_client finds a labelled child under a lock: once per label set here
            counted = self._answers[(event, code)] = (self._requests.labels(event, code), self._durations.labels(event))
        requests, durations = counted
        requests.inc()
        durations.observe(seconds)

    def refused_busy(self, event: str) -> None:
        """An event the full handler pool could not take: answered 500 without a handler
        (its name is the client's: one this Server does not handle counts as "other")."""
        self._requests.labels(event if event in _HANDLED else "other", "500").inc()

    def refused_backed_off(self) -> None:
        self._backed_off.inc()

    def fanned_out(self, event: str) -> None:
        self._notifications.labels(event).inc()

    # -- MembershipWatcher ------------------------------------------------------------------

    def joined(self, member: Session) -> None:
        self._joins.labels(member.role).inc()

    def left(self, member: Session, reason: str) -> None:
        self._leaves.labels(member.role, reason).inc()

    def auth_failed(self, address: str) -> None:
        self._auth_failures.inc()

    # -- RegistryObserver -------------------------------------------------------------------

    def looked_up(self, seconds: float) -> None:
        self._lookups.observe(seconds)

    def epoch_changed(self) -> None:
        self._epoch_changes.inc()

    def written_back(self, refused: bool) -> None:
        self._write_backs.labels("refused" if refused else "written").inc()

    def purged(self) -> None:
        self._purged.inc()


class _Levels(Collector):
    """What is now, and the counts kept by the Server itself, read at each scrape."""

    def __init__(self, sio: Any, registry: OfficeRegistry, pending: Callable[[], int]) -> None:
        self._sio = sio
        self._registry = registry
        self._pending = pending

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        sessions = self._registry.local_sessions()
        by_role = GaugeMetricFamily(
            "smcp_sessions", "Socket.IO sessions of /smcp on this process, by role (none: not joined yet)", labels=["role"]
        )
        for role in ("agent", "computer", "none"):
            by_role.add_metric([role], sum(1 for s in sessions if (s.role or "none") == role))
        yield by_role
        offices = {s.office_id for s in sessions if s.office_id is not None}
        yield GaugeMetricFamily("smcp_offices", "Offices with a member connected to this process", value=len(offices))
        yield GaugeMetricFamily(
            "smcp_engineio_connections", "Open Engine.IO connections (authenticated or not)", value=len(self._sio.eio.sockets)
        )
        pool = self._sio.handler_pool
        yield GaugeMetricFamily("smcp_handler_threads", "Threads of the event handlers' pool", value=pool.thread_count)
        yield GaugeMetricFamily("smcp_handler_queue", "Events waiting for a handler thread", value=pool.queued_count)
        yield GaugeMetricFamily(
            "smcp_pending_requests", "Requests forwarded to a Computer and not answered yet", value=self._pending()
        )
        failures = CounterMetricFamily(
            "smcp_send_failures",
            "Messages for a client not sent, by kind (failed: the write failed, the connection was dropped; "
            "closed: the session was closing)",
            labels=["kind"],
        )
        for kind, count in self._sio.eio.send_failures.snapshot().items():
            failures.add_metric([kind], count)
        yield failures
        ready = GaugeMetricFamily(
            "smcp_registry_ready", "1 while the office registry takes joins (with Redis: reachable and settled)"
        )
        ready.add_metric([], 1 if self._registry.readiness()["ready"] else 0)
        yield ready
