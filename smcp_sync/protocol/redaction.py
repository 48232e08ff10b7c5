"""Credentials masked wherever a URL, a header, a command line or an upstream error is
shown: in logs, `Computer.diagnostics()`, CLI output, codes sent to an Agent and
`client:get_config` (docs/server/security-redaction.md; DESIGN §3a: a secret never
leaves the machine it is configured on).

What counts as one: a URL's user info (``https://alice:hunter2@host``); the value of a
query key that looks secret (``?api_key=…``, ``&sig=…``); the value of a header that
looks secret (``Authorization``, ``Cookie``, ``X-Api-Key``); in arguments, the value
after a flag that looks secret (``--token X``, ``--api-key=X``), and ``NAME=value`` or
``Name: value`` where the name looks secret. A name looks secret when it contains one of
`SECRET_WORDS`, in any case. A value that is only an ``${input:…}`` / ``${env:…}``
placeholder is kept: it names where the secret comes from, not the secret. Hosts, paths
and status codes stay: a message must still say what failed.

The lowest layer (`protocol`), so that every role and the CLI use this one redaction.
"""

from __future__ import annotations

import re
from typing import Sequence
from urllib.parse import urlsplit, urlunsplit

#: What a masked value is shown as.
REDACTED = "<redacted>"

#: Parts of a key, header or flag name that mark its value as a credential.
SECRET_WORDS = (
    "token", "key", "secret", "passw", "pwd", "auth", "sig", "credential", "cookie", "session", "bearer", "private",
)  # fmt: skip
_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\$\{[^}]+\}")
_FLAG = re.compile(r"^(-{1,2}[A-Za-z0-9][\w.-]*)(=(.*))?$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^([A-Za-z_][\w.-]*)(=|:\s*)(.+)$", re.DOTALL)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: A URL inside free text: a scheme, then up to a space, a quote or a closing bracket.
_URL_IN_TEXT = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>`)\]]+""")
#: A secret-looking ``name=value`` or ``Name: value`` inside free text (a header line, a
#: form field, a config line quoted in an error); the value runs to a space, quote or `&`.
_ASSIGNMENT_IN_TEXT = re.compile(r"""\b([A-Za-z_][\w.-]*)(=|:[ \t]*)((?:Bearer|Basic|Token)[ \t]+)?([^\s'"&,;]+)""")


def looks_secret(name: str) -> bool:
    """Whether a key, header or flag named `name` holds a credential; of a dotted path
    (``oauth.mode.issuer``), its last part says (``oauth`` alone names no secret)."""
    return bool(_SECRET_NAME.search(name.rsplit(".", 1)[-1]))


def redact_url(url: str, mask: str = REDACTED) -> str:
    """`url` with its user info and the values of secret-looking query keys masked."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced "[" in the host part: nothing of it can be told apart
        return mask
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{_masked(userinfo, mask)}@{host}"
    query = "&".join(_query_item(item, mask) for item in parts.query.split("&")) if parts.query else ""
    fragment = "&".join(_query_item(item, mask) for item in parts.fragment.split("&")) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_args(args: Sequence[str], mask: str = REDACTED) -> list[str]:
    """A command line with every inline credential masked."""
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
        shown.append(_redact_arg(arg, mask))
    return shown


def redact_text(text: str, mask: str = REDACTED) -> str:
    """Free text (an upstream error, a log message) with the credentials in it masked:
    every URL in it as `redact_url` does, and every secret-looking ``name=value`` or
    ``Name: value``: a header line (``Authorization: Bearer …``, ``Cookie: …``,
    ``X-Api-Key: …``), a form field, a config line quoted in an error."""
    text = _URL_IN_TEXT.sub(lambda found: redact_url(found.group(0), mask), text)
    return _ASSIGNMENT_IN_TEXT.sub(lambda found: _assignment(found, mask), text)


#: An exception's name before its message (``OAuthTokenError: Token exchange failed``) is
#: no header: its message is kept.
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning)$")


def _assignment(found: re.Match[str], mask: str) -> str:
    name, sep, scheme, value = found.group(1), found.group(2), found.group(3) or "", found.group(4)
    if not looks_secret(name) or _EXCEPTION_NAME.search(name) or value == mask or value.startswith(mask):
        return found.group(0)
    return f"{name}{sep}{scheme}{_masked(value, mask)}"


def _redact_arg(text: str, mask: str) -> str:
    if _URL.match(text):
        return redact_url(text, mask)
    assignment = _ASSIGNMENT.match(text)
    if assignment is not None and looks_secret(assignment.group(1)):
        return f"{assignment.group(1)}{assignment.group(2)}{_masked(assignment.group(3), mask)}"
    return text


def _query_item(item: str, mask: str) -> str:
    key, sep, value = item.partition("=")
    return f"{key}={_masked(value, mask)}" if sep and looks_secret(key) else item


def _masked(value: str, mask: str) -> str:
    return value if _PLACEHOLDER.fullmatch(value) else mask
