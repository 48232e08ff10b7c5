"""Credentials written inline in a config's URLs and command-line arguments, found so
that `client:get_config` can show the rest (spec-0.3 computer-management/protocol.md §5:
no secret value in an Agent-facing answer).

What counts as one: a URL's user info (``https://alice:hunter2@host``); the value of a
query key that looks secret (``?api_key=…``, ``&sig=…``); in arguments, the value after
a flag that looks secret (``--token X``, ``--api-key=X``), and ``NAME=value`` or
``Name: value`` where the name looks secret. A name looks secret when it contains one of
`SECRET_WORDS`, in any case. A value that is only an ``${input:…}`` / ``${env:…}``
placeholder is kept: it names where the secret comes from, not the secret.
"""

from __future__ import annotations

import re
from typing import Sequence
from urllib.parse import urlsplit, urlunsplit

#: Parts of a key or flag name that mark its value as a credential.
SECRET_WORDS = (
    "token", "key", "secret", "passw", "pwd", "auth", "sig", "credential", "cookie", "session", "bearer", "private",
)  # fmt: skip
_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\$\{[^}]+\}")
_FLAG = re.compile(r"^(-{1,2}[A-Za-z0-9][\w.-]*)(=(.*))?$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^([A-Za-z_][\w.-]*)(=|:\s*)(.+)$", re.DOTALL)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def without_credentials(args: Sequence[str], mask: str) -> list[str]:
    """`args` with every inline credential replaced by `mask`."""
    shown: list[str] = []
    after_secret_flag = False
    for arg in args:
        if after_secret_flag and not arg.startswith("-"):
            shown.append(_masked(arg, mask))
            after_secret_flag = False
            continue
        after_secret_flag = False
        flag = _FLAG.match(arg)
        if flag is not None and looks_secret(flag.group(1)):
            if flag.group(2) is None:
                after_secret_flag = True
                shown.append(arg)
            else:
                shown.append(f"{flag.group(1)}={_masked(flag.group(3), mask)}")
            continue
        shown.append(_without_inline_credentials(arg, mask))
    return shown


def _without_inline_credentials(text: str, mask: str) -> str:
    if _URL.match(text):
        return url_without_credentials(text, mask)
    assignment = _ASSIGNMENT.match(text)
    if assignment is not None and looks_secret(assignment.group(1)):
        return f"{assignment.group(1)}{assignment.group(2)}{_masked(assignment.group(3), mask)}"
    return text


def url_without_credentials(url: str, mask: str) -> str:
    """`url` with its user info and the values of secret-looking query keys masked."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all (an unbalanced "[" in the host part)
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{_masked(userinfo, mask)}@{host}"
    query = "&".join(_query_item(item, mask) for item in parts.query.split("&")) if parts.query else ""
    fragment = "&".join(_query_item(item, mask) for item in parts.fragment.split("&")) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _query_item(item: str, mask: str) -> str:
    key, sep, value = item.partition("=")
    return f"{key}={_masked(value, mask)}" if sep and looks_secret(key) else item


def _masked(value: str, mask: str) -> str:
    return value if _PLACEHOLDER.fullmatch(value) else mask
