"""Connection authentication: a provider interface and the default API-key provider.

A provider sees the WSGI `environ` and the Socket.IO `auth` dict of a connecting client
and returns False (refuse) or something truthy: True, or an identity the application
wants to keep (stored in the Socket.IO session under ``"identity"``).
"""

from __future__ import annotations

import hmac
from typing import Any, Mapping, Protocol, runtime_checkable

#: The field the official A2C-SMCP SDK's clients put their key in.
OFFICIAL_SDK_KEY_FIELD = "access_token"


@runtime_checkable
class AuthProvider(Protocol):
    def authenticate(self, environ: Mapping[str, Any], auth: Any) -> Any:
        """False/None refuses the connection; anything truthy accepts it."""


class APIKeyAuth:
    """Accept clients that present `api_key` in their Socket.IO `auth` dict.

    The key is read from `field` (default ``"api_key"``) or, so the official SDK's
    clients can connect unchanged, from ``"access_token"``. The comparison is constant
    time; the key never appears in a log line or a repr.
    """

    def __init__(self, api_key: str, field: str = "api_key") -> None:
        if not isinstance(api_key, str) or not api_key:
            raise ValueError("api_key must be a non-empty string")
        self._expected = api_key.encode("utf-8")
        self._fields = tuple(dict.fromkeys((field, OFFICIAL_SDK_KEY_FIELD)))

    def authenticate(self, environ: Mapping[str, Any], auth: Any) -> bool:
        if not isinstance(auth, Mapping):
            return False
        presented = [auth[f] for f in self._fields if isinstance(auth.get(f), str)]
        # Compare every candidate (no early exit), so timing says nothing about which matched.
        matches = [hmac.compare_digest(p.encode("utf-8"), self._expected) for p in presented]
        return any(matches)

    def __repr__(self) -> str:
        return f"APIKeyAuth(fields={self._fields!r})"


def as_provider(auth: AuthProvider | str | None) -> AuthProvider | None:
    """`SMCPServer(auth=...)` accepts a provider, an API key string, or None (no auth)."""
    if auth is None or isinstance(auth, AuthProvider):
        return auth
    if isinstance(auth, str):
        return APIKeyAuth(auth)
    raise TypeError(f"auth must be an AuthProvider, an API key string or None, not {type(auth).__name__}")
