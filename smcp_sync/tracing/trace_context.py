"""W3C trace context across the Agent → Server → Computer hops, with the OpenTelemetry
API: the Agent's request opens a CLIENT span and carries its context in the payload's
`_meta` (``traceparent``, ``tracestate``: a field the official SDK and our models
ignore); the Server's routing span and the Computer's handling span continue it, each
carrying its own context on, and the mcp SDK's spans on the Computer's loop follow
(the call's task inherits the context it was submitted in).

No-op, and nothing built, until the application sets a tracer provider: OpenTelemetry's
default one is a proxy that makes nothing (`tracing()`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
except ImportError:  # the API comes with the mcp SDK; kept optional all the same
    trace = None  # type: ignore[assignment]

#: The payload field that carries the trace context (as MCP's own `_meta` does).
META = "_meta"
TRACER = "smcp_sync"


#: The provider the tracer below came from, and that tracer: asking a provider for a
#: tracer makes a new one each time (~15 µs, a third of a span's cost), so the tracer is
#: made again only when the application sets another provider.
_tracer_of: tuple[Any, Any] = (None, None)


def tracing() -> bool:
    """Whether spans are recorded: a tracer provider was set (not OpenTelemetry's proxy)."""
    return trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _tracer() -> Any:
    """This package's tracer from the current tracer provider."""
    global _tracer_of
    provider = trace.get_tracer_provider()
    made_by, tracer = _tracer_of
    if made_by is not provider:
        tracer = trace.get_tracer(TRACER, tracer_provider=provider)
        _tracer_of = (provider, tracer)
    return tracer


def carries_context(payload: Any) -> bool:
    """Whether `payload` may carry a trace context (a cheap look before `handling_span`)."""
    return isinstance(payload, dict) and META in payload


def carrying(payload: Any) -> Any:
    """`payload` with the current span's context in its `_meta` (a copy; other `_meta`
    keys kept); a payload that is not an object, unchanged."""
    if not isinstance(payload, dict):
        return payload
    meta = payload.get(META)
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return {**payload, META: {**(meta if isinstance(meta, dict) else {}), **carrier}}


@contextlib.contextmanager
def client_span(event: str, payload: Any) -> Iterator[Any]:
    """An Agent's request: a CLIENT span for its whole round trip; yields the payload to
    send (carrying the span's context)."""
    if not tracing():
        yield payload
        return
    with _tracer().start_as_current_span(f"smcp {event}", kind=trace.SpanKind.CLIENT, attributes={"smcp.event": event}):
        yield carrying(payload)


@contextlib.contextmanager
def handling_span(name: str, payload: Any, kind: Any = None, **attributes: Any) -> Iterator[Any]:
    """A hop handling a request: a span that continues the context `payload` carries,
    current while the block runs and left open: yields it for `ended` to close when the
    answer goes. None when not tracing or when the payload carries no context (a client
    that traces nothing starts no trace here)."""
    meta = payload.get(META) if isinstance(payload, dict) else None
    if not (isinstance(meta, dict) and "traceparent" in meta and tracing()):
        yield None
        return
    parent = propagate.extract(meta)
    span = _tracer().start_span(name, context=parent, kind=kind or trace.SpanKind.SERVER, attributes=attributes)
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    finally:
        otel_context.detach(token)


def ended(span: Any) -> None:
    """Close a span `handling_span` gave (None: nothing)."""
    if span is not None:
        span.end()
