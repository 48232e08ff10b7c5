"""Connection authentication: a provider interface and the default API-key provider.

A provider sees the WSGI `environ` and the Socket.IO `auth` dict of a connecting client
and returns False (refuse) or something truthy: True, or an identity the application
wants to keep (stored in the Socket.IO session under ``"identity"``).
"""

from __future__ import annotations

import hmac
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

#: The auth-dict fields `APIKeyAuth` reads by default: a2c-smcp 0.4.2's default (`token`),
#: 0.1.x's (`access_token`, when its key is put in the auth dict) and ours (`api_key`).
KEY_FIELDS = ("token", "access_token", "api_key")
#: The HTTP headers it reads by default: 0.1.x's default (`access_token`) and
#: `Authorization: Bearer KEY`.
KEY_HEADERS = ("access_token", "authorization")
#: Key headers whose names have an underscore. The WSGI servers `SMCPServer` runs pass
#: them to the app (werkzeug and gunicorn drop such names by default, which locked out
#: the official 0.1.x clients' default auth); see `background_http` and `gunicorn_runner`.
UNDERSCORE_KEY_HEADERS = ("access_token",)

_BEARER = "bearer "


@runtime_checkable
class AuthProvider(Protocol):
    def authenticate(self, environ: Mapping[str, Any], auth: Any) -> Any:
        """False/None refuses the connection; anything truthy accepts it. Runs on the
        thread reading the client's socket (under `serve(mode="threads")` a small pool's,
        not the reactor's: docs/server/deployment.md); while it waits, that client's
        later messages wait."""


class APIKeyAuth:
    """Accept clients that present `api_key` where an A2C-SMCP client may put it: the
    Socket.IO auth dict's `fields` or the connect request's HTTP `headers` (an
    ``Authorization`` header as ``Bearer KEY``).

    The comparison is constant time and looks at every place (which one matched is not
    observable); the key never appears in a log line or a repr.
    """

    def __init__(self, api_key: str, fields: Iterable[str] = KEY_FIELDS, headers: Iterable[str] = KEY_HEADERS) -> None:
        if not isinstance(api_key, str) or not api_key:
            raise ValueError("api_key must be a non-empty string")
        self._expected = api_key.encode("utf-8")
        self._fields = tuple(dict.fromkeys(fields))
        self._headers = tuple(dict.fromkeys(name.lower() for name in headers))
        if not self._fields and not self._headers:
            raise ValueError("APIKeyAuth needs at least one auth field or header to read the key from")

    def authenticate(self, environ: Mapping[str, Any], auth: Any) -> bool:
        presented = [*self._from_auth(auth), *self._from_headers(environ)]
        matches = [hmac.compare_digest(p, self._expected) for p in presented]
        return any(matches)

    def _from_auth(self, auth: Any) -> list[bytes]:
        if not isinstance(auth, Mapping):
            return []
        return [auth[f].encode("utf-8", "replace") for f in self._fields if isinstance(auth.get(f), str)]

    def _from_headers(self, environ: Mapping[str, Any]) -> list[bytes]:
        presented = []
        for name in self._headers:
            value = environ.get("HTTP_" + name.upper().replace("-", "_"))
            if not isinstance(value, str):
                continue
            if name == "authorization":
                if value[: len(_BEARER)].lower() != _BEARER:
                    continue
                value = value[len(_BEARER) :].strip()
            try:
                presented.append(value.encode("latin-1"))  # WSGI: the header's bytes as latin-1
            except UnicodeEncodeError:
                continue
        return presented

    def __repr__(self) -> str:
        return f"APIKeyAuth(fields={self._fields!r}, headers={self._headers!r})"


def as_provider(auth: AuthProvider | str | None) -> AuthProvider | None:
    """`SMCPServer(auth=...)` accepts a provider, an API key string, or None (no auth)."""
    if auth is None or isinstance(auth, AuthProvider):
        return auth
    if isinstance(auth, str):
        return APIKeyAuth(auth)
    raise TypeError(f"auth must be an AuthProvider, an API key string or None, not {type(auth).__name__}")
