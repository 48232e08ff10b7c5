"""The URI syntax that `window://` and `dpe://` share, so both parsers apply it alike.

Both schemes are ``scheme://host[/segment...][?key=value&...]``: the host is an MCP
server id taken verbatim (RFC 3986 reg-name characters, no percent-decoding, no port or
user part), path segments are percent-decoded one by one (``c%2Fd`` stays one segment,
``c/d``), query keys and values are percent-decoded. Rules both specs leave implicit and
that we enforce because a URI breaking them cannot be rebuilt faithfully: no whitespace
or control characters, every ``%`` starts a ``%XX`` escape of UTF-8, no fragment, no
empty path segment (a lone ``/`` after the host means no path), no parameter given
twice. A broken rule raises `RuleBroken`; each parser turns it into its own coded error
with `reporting`, so messages read ``invalid <scheme> URI '<text>': <rule>: <why>``.
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator, Mapping, NamedTuple
from urllib.parse import quote, unquote_to_bytes, urlsplit

from .errors import SMCPError, cut_short

#: RFC 3986 reg-name characters (unreserved + sub-delims), percent-escapes excluded.
_HOST = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DIGITS = re.compile(r"[0-9]+")


class RuleBroken(ValueError):
    """A URI rule failed; the message names the rule and the offending value."""


class SplitURI(NamedTuple):
    host: str
    segments: list[str]
    query: list[tuple[str, str]]


@contextlib.contextmanager
def reporting(error: type[SMCPError], scheme: str, text: object = None) -> Iterator[None]:
    """Turn a `RuleBroken` inside the block into `error`, quoting `text` when there is one."""
    try:
        yield
    except RuleBroken as exc:
        where = "" if text is None else f" {cut_short(repr(text))}"
        details = {"uri": cut_short(text)} if isinstance(text, str) else None
        raise error(f"invalid {scheme} URI{where}: {cut_short(str(exc), 400)}", details=details) from None


def split(text: object, scheme: str) -> SplitURI:
    """Host, decoded path segments and decoded query pairs of a ``scheme://`` URI."""
    if not isinstance(text, str):
        raise RuleBroken(f"expected a string, got {type(text).__name__}")
    _check_characters(text)
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # urlsplit only refuses hosts: unbalanced '[', bad IPv6
        raise RuleBroken(f"host is not well-formed ({exc})") from None
    if parts.scheme.lower() != scheme:
        got = repr(parts.scheme) if parts.scheme else "none"
        raise RuleBroken(f"rule 1: scheme must be '{scheme}', got {got}")
    check_host(parts.netloc)
    if "#" in text:
        raise RuleBroken("a fragment ('#') is not allowed; percent-encode '#' as %23")
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    segments = [decode(segment) for segment in path.split("/")] if path else []
    if "" in segments:
        raise RuleBroken(f"empty path segment in {parts.path!r}")
    return SplitURI(parts.netloc, segments, _query_pairs(parts.query))


def _query_pairs(query: str) -> list[tuple[str, str]]:
    """Decoded ``key=value`` pairs; ``+`` is a plus here (URIs are not form-encoded), a
    field without ``=`` has an empty value, empty fields (``a=1&&b=2``) are skipped."""
    pairs = []
    for field in query.split("&"):
        if field:
            key, _, value = field.partition("=")
            pairs.append((decode(key), decode(value)))
    return pairs


def _check_characters(text: str) -> None:
    bad = next((c for c in text if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise RuleBroken(f"whitespace or control character {bad!r} must be percent-encoded")
    match = _BAD_ESCAPE.search(text)
    if match:
        raise RuleBroken(f"'%' at position {match.start()} does not start a %XX escape")
    try:
        unquote_to_bytes(text).decode("utf-8")
    except UnicodeError:
        raise RuleBroken("percent-escapes or characters are not valid UTF-8") from None


def check_host(host: object) -> None:
    if not isinstance(host, str):
        raise RuleBroken(f"rule 2: host must be a string, got {host!r}")
    if not host:
        raise RuleBroken("rule 2: host must not be empty")
    if not _HOST.fullmatch(host):
        raise RuleBroken(f"host {host!r} may only contain letters, digits and -._~!$&'()*+,;=")


def check_text(value: object, label: str) -> None:
    """A path value (segment, doc-ref, element id): a non-empty string we can encode.
    `label` names the rule and the value, e.g. ``"rule 3: element id"``."""
    if not isinstance(value, str) or not value:
        raise RuleBroken(f"{label} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeError:
        raise RuleBroken(f"{label} {value!r} is not valid Unicode text") from None


def decode(segment: str) -> str:
    return unquote_to_bytes(segment).decode("utf-8")


def encode(value: str) -> str:
    """One path segment: everything but unreserved characters escaped, '/' included."""
    return quote(value, safe="")


def parse_int(text: str, label: str, low: int, high: int) -> int:
    """A decimal integer in [low, high]; digits only (no sign, no spaces)."""
    if not _DIGITS.fullmatch(text) or len(text.lstrip("0")) > len(str(high)) or not low <= int(text) <= high:
        raise RuleBroken(f"{label} must be an integer in [{low}, {high}], got {text!r}")
    return int(text)


def check_int(value: object, label: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RuleBroken(f"{label} must be an integer in [{low}, {high}], got {value!r}")


def known_params(query: list[tuple[str, str]], known: tuple[str, ...], strict: bool) -> dict[str, str]:
    """The query as a dict of the `known` keys; a key given twice is refused, and an unknown
    key too when `strict`."""
    values: dict[str, str] = {}
    for key, value in query:
        if key not in known:
            if strict:
                raise RuleBroken(f"unknown query parameter {key!r}; expected one of {', '.join(known)}")
            continue
        if key in values:
            raise RuleBroken(f"query parameter {key!r} given more than once")
        values[key] = value
    return values


def build_query(params: Mapping[str, object]) -> str:
    """``?k=v&...`` of the parameters that are set (values are already URI-safe tokens)."""
    fields = [f"{key}={value}" for key, value in params.items() if value is not None]
    return "?" + "&".join(fields) if fields else ""
