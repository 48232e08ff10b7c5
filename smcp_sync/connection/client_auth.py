"""How our Agent and Computer present a key, so they reach every kind of Server with its
default auth: a2c-smcp 0.4.2 reads the Socket.IO auth dict's `token`, 0.1.6 the HTTP
header `access_token`, ours any of `token` / `access_token` / `api_key` and the headers
`access_token` and `Authorization: Bearer` (where the WSGI server passes them).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

#: The auth-dict fields a key goes in by default: 0.4.2's, 0.1.x's and ours.
DEFAULT_KEY_FIELDS = ("token", "access_token", "api_key")

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")  # RFC 9110 field name
_FORBIDDEN_IN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_MAX_VALUE_LENGTH = 8192


def checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Extra HTTP headers for the connect request, checked: a name that is not an HTTP
    token, or a value with a line break or control character (which would split or
    corrupt the request), raises ValueError naming the header."""
    checked: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ValueError(f"HTTP header name {name!r:.80} is not a valid header name")
        if not isinstance(value, str) or len(value) > _MAX_VALUE_LENGTH or _FORBIDDEN_IN_VALUE.search(value):
            raise ValueError(
                f"HTTP header {name!r}: its value must be a string of at most {_MAX_VALUE_LENGTH} characters "
                "without line breaks or control characters"
            )
        checked[name] = value
    return checked


def key_auth(api_key: str, fields: Iterable[str] = DEFAULT_KEY_FIELDS) -> dict[str, Any]:
    """The Socket.IO auth dict carrying `api_key` under each of `fields`."""
    return {field: api_key for field in fields}


def key_headers(api_key: str, header: str) -> dict[str, str]:
    """`api_key` as the HTTP header `header` (``Authorization`` gets ``Bearer KEY``)."""
    value = f"Bearer {api_key}" if header.lower() == "authorization" else api_key
    return checked_headers({header: value})
