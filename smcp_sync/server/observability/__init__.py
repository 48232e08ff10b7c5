"""What an operator sees of a running Server: health probes, Prometheus metrics, the
audit trail of tool calls and memberships, python-socketio's Admin UI (docs/server/
operations.md). Chosen with one `SMCPServer(observability=Observability(...))`."""

from .options import AdminUI, AuditOptions, Observability

__all__ = ["AdminUI", "AuditOptions", "Observability"]
