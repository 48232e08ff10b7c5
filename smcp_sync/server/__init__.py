"""The Server role: sessions, offices, routing of `client:*`, `notify:*` fan-out.

`SMCPServer` is imported on first use: it needs the `server` extra (werkzeug, gunicorn,
`extra`), while the rest of this package (auth, registries, limits) does not, so that
the CLI can describe `smcp-sync server` on an Agent-only install.
"""

from typing import TYPE_CHECKING, Any

from .auth import APIKeyAuth, AuthProvider
from .limits.limits import ServerLimits
from .observability.options import AdminUI, AuditOptions, Observability
from .offices.office_rules import JoinOutcome, Session
from .offices.registry import InMemoryRegistry, OfficeRegistry
from .scale_out.redis_options import RedisOptions

if TYPE_CHECKING:
    from .app import SMCPServer as SMCPServer


def __getattr__(name: str) -> Any:
    if name != "SMCPServer":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .app import SMCPServer

    return SMCPServer

__all__ = [
    "SMCPServer",
    "ServerLimits",
    "RedisOptions",
    "Observability",
    "AdminUI",
    "AuditOptions",
    "APIKeyAuth",
    "AuthProvider",
    "InMemoryRegistry",
    "OfficeRegistry",
    "JoinOutcome",
    "Session",
]
