"""Each answered request, as metrics, the audit trail and tracing see it: its event,
outcome and time, and the routing span of a request that carries a trace context.

Wraps a handler (`SMCPServer._handle`), after `answers` has made its answer: a
refusal's code is in the answer. A routed request answers with a `Future`; it is seen
when done, before `engine` sends it (callbacks run in the order added), so a client
that has its answer finds it counted. A traced request is handled inside its routing
span, and what is forwarded carries that span's context (`tracing`): the Computer's
span is its child.
"""

from __future__ import annotations

import functools
import logging
import time
from concurrent.futures import Future
from typing import Any, Callable

from ...tracing import carries_context, carrying, ended, handling_span
from .audit import AuditTrail
from .outcome import outcome_of

logger = logging.getLogger(__name__)

Handler = Callable[..., Any]


class RequestObserver:
    def __init__(self, metrics: Any, audit: AuditTrail | None, tracing: bool) -> None:
        """`metrics`: a `metrics.ServerMetrics` or None (the extra may be missing)."""
        self._metrics = metrics
        self._audit = audit
        self._tracing = tracing

    def observe(self, event: str, handler: Handler) -> Handler:
        """`handler`, observed (unchanged when nothing observes)."""
        if self._metrics is None and self._audit is None and not self._tracing:
            return handler

        route = f"smcp route {event}"

        @functools.wraps(handler)
        def observed(sid: str, *args: Any) -> Any:
            started = time.perf_counter()
            span = None
            if self._tracing and args and carries_context(args[0]):
                with handling_span(route, args[0], **{"smcp.event": event}) as span:
                    if span is not None:
                        args = (carrying(args[0]), *args[1:])
                    answer = handler(sid, *args)
            else:
                answer = handler(sid, *args)
            if isinstance(answer, Future):
                answer.add_done_callback(lambda done: self._answered(event, sid, args, started, done.result(), span))
            else:
                self._answered(event, sid, args, started, answer, span)
            return answer

        return observed

    def _answered(self, event: str, sid: str, args: tuple[Any, ...], started: float, answer: Any, span: Any) -> None:
        seconds = time.perf_counter() - started
        try:
            ended(span)
            if self._metrics is None and self._audit is None:
                return
            code = outcome_of(event, answer)
            if self._metrics is not None:
                self._metrics.answered(event, code, seconds)
            if self._audit is not None:
                self._audit.answered(event, sid, args, code, seconds, answer)
        except Exception:  # observing must never cost a caller its answer
            logger.exception("observing %s failed", event)
