"""The A2C-SMCP wire version we speak and the rule that decides who may connect.

`spec-0.3/versioning.md`: clients put `a2c_version` in the connect URL's query; the Server
checks it at the HTTP layer, before Socket.IO, and refuses an incompatible one with HTTP
400 and the flat 4008 body. This module is the only place that knows our version and the
compatibility rule; the Server's middleware and the clients' connect both ask it.

Decisions where the spec is silent (docs/wire/handshake-and-auth.md, *Version handshake*):

* A version may carry a pre-release suffix (``0.4.0-dev``, the spec's own marker of an
  unreleased version); it is ignored for compatibility.
* A query that names `a2c_version` more than once is refused (400): which one counts
  would be a guess.
* A client that sends no version (official 0.1.x SDKs) is accepted unless the Server
  requires one (`SMCPServer(require_client_version=True)`), then refused as the spec says.
"""

from __future__ import annotations

import re
from typing import Any, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

from .errors import BadRequestError, SMCPError, VersionMismatchError, cut_short

#: The protocol version smcp_sync implements (what a2c-smcp 0.4.2 sends).
PROTOCOL_VERSION = "0.4.0"
#: The URL query parameter that carries a client's version.
VERSION_QUERY_KEY = "a2c_version"
#: The response header that names the refusal code of a version mismatch.
ERROR_CODE_HEADER = "X-A2C-Error-Code"
#: The error code of an incompatible version (error-handling.md §4008).
VERSION_MISMATCH_CODE = 4008
#: The highest PATCH the supported range names (the spec's own example: ``0.2.999``).
_PATCH_CEILING = 999

_VERSION = re.compile(r"(?P<major>[0-9]{1,9})\.(?P<minor>[0-9]{1,9})\.(?P<patch>[0-9]{1,9})(?:-[0-9A-Za-z.-]{1,64})?")


@attrs.frozen(order=True)
class ProtocolVersion:
    """``MAJOR.MINOR.PATCH`` of the A2C-SMCP protocol."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: Any) -> ProtocolVersion:
        """Read ``MAJOR.MINOR.PATCH`` (optionally ``-prerelease``); ValueError says why not."""
        if not isinstance(text, str):
            raise ValueError(f"a version is a string, not {type(text).__name__}")
        match = _VERSION.fullmatch(text)
        if match is None:
            raise ValueError(f"{cut_short(text, 40)!r} is not MAJOR.MINOR.PATCH")
        return cls(int(match["major"]), int(match["minor"]), int(match["patch"]))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


OURS = ProtocolVersion.parse(PROTOCOL_VERSION)


def is_compatible(client: ProtocolVersion, server: ProtocolVersion = OURS) -> bool:
    """versioning.md: before 1.0 MAJOR.MINOR must match; from 1.0 the MAJOR must match and
    the Server's MINOR be at least the client's. PATCH never matters."""
    if client.major != server.major:
        return False
    if client.major == 0:
        return client.minor == server.minor
    return client.minor <= server.minor


def supported_range(server: ProtocolVersion = OURS) -> tuple[str, str]:
    """The lowest and highest client version `server` accepts, for the 4008 body."""
    lowest_minor = server.minor if server.major == 0 else 0
    return f"{server.major}.{lowest_minor}.0", f"{server.major}.{server.minor}.{_PATCH_CEILING}"


def mismatch_body(client: str, server: ProtocolVersion = OURS) -> dict[str, Any]:
    """The flat 4008 body of error-handling.md (the keys a2c-smcp 0.4.2 reads)."""
    lowest, highest = supported_range(server)
    return {
        "code": VERSION_MISMATCH_CODE,
        "message": "Protocol version mismatch",
        "server_version": str(server),
        "client_version": client,
        "min_supported": lowest,
        "max_supported": highest,
    }


def handshake_refusal(
    values: Sequence[str], *, require: bool, server: ProtocolVersion = OURS
) -> dict[str, Any] | None:
    """The HTTP 400 body refusing a connect whose query carried `values` for
    `a2c_version`, or None to let it through."""
    if not values:
        if require:
            return {"code": 400, "message": f"Missing {VERSION_QUERY_KEY} query parameter"}
        return None
    if len(values) > 1:
        return {"code": 400, "message": f"{VERSION_QUERY_KEY} given {len(values)} times; give it once"}
    try:
        client = ProtocolVersion.parse(values[0])
    except ValueError as exc:
        return {"code": 400, "message": f"Invalid {VERSION_QUERY_KEY}: {exc}"}
    if not is_compatible(client, server):
        return mismatch_body(str(client), server)
    return None


def handshake_url(url: str, extra_query: Sequence[tuple[str, str]] = ()) -> str:
    """`url` with our `a2c_version` (and `extra_query`) in its query; a version the caller
    put there is replaced (the spec: clients send the SDK's constant, never the user's)."""
    parts = urlsplit(url)
    replaced = {VERSION_QUERY_KEY, *(key for key, _ in extra_query)}
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key not in replaced]
    query += [(VERSION_QUERY_KEY, PROTOCOL_VERSION), *extra_query]
    return urlunsplit(parts._replace(query=urlencode(query)))


def refusal_error(body: Any, url: str) -> SMCPError | None:
    """The typed error for a Server's HTTP 400 handshake answer `body` (the flat payload
    `handshake_refusal` makes), or None when `body` is not one. A 4008 names both versions."""
    error = SMCPError.from_wire(body)
    if not isinstance(error, (VersionMismatchError, BadRequestError)):
        return None
    if isinstance(error, BadRequestError):
        return BadRequestError(f"the Server at {url} refused the connection: {error.message}", details=error.details)
    theirs = error.server_version or "an unknown version"
    accepted = f" (it accepts {error.min_supported} to {error.max_supported})" if error.min_supported and error.max_supported else ""
    message = (
        f"{error.message}: this client speaks A2C-SMCP {error.client_version or PROTOCOL_VERSION}, "
        f"the Server at {url} speaks {theirs}{accepted}"
    )
    return VersionMismatchError(message, fields=error.fields, details=error.details)
