"""The Server role: sessions, offices, routing of `client:*`, `notify:*` fan-out."""

from .app import SMCPServer
from .auth import APIKeyAuth, AuthProvider
from .office_rules import JoinOutcome, Session
from .registry import InMemoryRegistry, OfficeRegistry

__all__ = ["SMCPServer", "APIKeyAuth", "AuthProvider", "InMemoryRegistry", "OfficeRegistry", "JoinOutcome", "Session"]
