"""One trace from Agent to MCP server: W3C trace context carried in each request's
`_meta` (OpenTelemetry's API; every call is a no-op until the application sets a tracer
provider, e.g. with the `tracing` extra's SDK)."""

from .trace_context import carries_context, carrying, client_span, ended, handling_span, tracing

__all__ = ["carries_context", "carrying", "client_span", "ended", "handling_span", "tracing"]
