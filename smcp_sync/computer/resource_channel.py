"""One context channel of the Computer: the MCP resources of one URI scheme (`window://`
for the Desktop, `dpe://` for the Finder), the values read from them, and which MCP
server owns a URI host.

Desktop and Finder are one mechanism (DESIGN §2); a channel is parameterised by its
scheme, by how one listed resource becomes a value (a window's contents, a document's
Level 1 summary) and by the event that announces its changes. `ResourceWatch` keeps the
listings current; a channel reads values on demand, through its `UriCache`, so a value
is read once and then served from the cache until a change notice drops it. The values
a server's listing is missing are read in one batch (`ServerManager.read_resources`):
a cold Finder of thousands of documents must not cost one round trip per document.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Generic, Sequence, TypeVar
from urllib.parse import urlsplit

import attrs

from ..protocol.errors import SMCPError, SMCPTimeoutError
from .uri_cache import UriCache

log = logging.getLogger(__name__)

V = TypeVar("V")

#: Reads listed resources: ``read(server, uris) -> [contents or SMCPError, ...]`` in order.
ReadMany = Callable[[str, Sequence[str]], Sequence[Any]]
#: Whether a listed URI is worth reading: ``check(uri)`` raises `SMCPError` if not.
Check = Callable[[str], object]
#: A read resource's value: ``value_of(server, contents) -> value``; raises `SMCPError`.
ValueOf = Callable[[str, Any], V]


def scheme_and_host(uri: str) -> tuple[str, str] | None:
    """The lower-case scheme and the host (maybe empty) of ``scheme://host/...``, also of a
    URI template whose placeholders are in the path; None when `uri` has no scheme."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    return (parts.scheme.lower(), parts.netloc) if parts.scheme else None


@attrs.frozen
class Entry(Generic[V]):
    server: str
    uri: str
    value: V


@attrs.frozen
class _Unreadable:
    """A listed resource that could not be turned into a value, and why."""

    reason: str
    #: Not cached: a timeout may answer next time.
    transient: bool = False


class ResourceChannel(Generic[V]):
    def __init__(
        self, name: str, scheme: str, update_event: str, read: ReadMany, check: Check, value_of: ValueOf[V]
    ) -> None:
        self.name = name
        self.scheme = scheme
        self.update_event = update_event
        self.cache = UriCache()
        self._read = read
        self._check = check
        self._value_of = value_of
        self._warned = threading.Lock()
        self._clashes_warned: set[tuple[str, ...]] = set()

    def __repr__(self) -> str:
        return f"<ResourceChannel {self.name} {self.scheme}://>"

    def accepts(self, uri: str) -> bool:
        found = scheme_and_host(uri)
        return found is not None and found[0] == self.scheme

    def entries(self, servers: Sequence[str], uri: str | None = None) -> list[Entry[V]]:
        """The values of the URIs `servers` list (server order, then listing order), or of
        the listed `uri` alone. A resource that cannot be read is left out (logged, and
        reported by `diagnostics` while the failure is cached)."""
        found: list[Entry[V]] = []
        for server in servers:
            listed = [u for u in self.cache.uris(server) if uri is None or u == uri]
            values = self._values(server, listed)
            found.extend(Entry(server, u, values[u]) for u in listed if not isinstance(values[u], _Unreadable))
        return found

    def owner_of(self, host: str, servers: Sequence[str]) -> str | None:
        """The first of `servers` (configuration order) that lists a URI on `host`; a host
        listed by several servers is a configuration problem, warned about once."""
        owners = [s for s in servers if any(scheme_and_host(u) == (self.scheme, host) for u in self.cache.uris(s))]
        if len(owners) > 1:
            with self._warned:
                first_time = tuple(owners) not in self._clashes_warned
                self._clashes_warned.add(tuple(owners))
            if first_time:
                log.warning(
                    "%s://%s is listed by MCP servers %s; requests go to %r, the first in the configuration",
                    self.scheme, host, owners, owners[0],
                )  # fmt: skip
        return owners[0] if owners else None

    def diagnostics(self) -> list[str]:
        return [
            f"{self.name}: {uri} of MCP server {server!r} is left out: {value.reason}"
            for server, uri, value in self.cache.cached_values()
            if isinstance(value, _Unreadable)
        ]

    def _values(self, server: str, uris: Sequence[str]) -> dict[str, V | _Unreadable]:
        """The value of each of `uris`: cached, or read (all the missing ones at once) and cached."""
        values, ticket = self.cache.cached(server)
        fresh: dict[str, V | _Unreadable] = {}
        to_read = []
        for uri in uris:
            if uri not in values:
                try:
                    self._check(uri)
                except SMCPError as exc:
                    fresh[uri] = self._unreadable(server, uri, exc)
                else:
                    to_read.append(uri)
        for uri, contents in zip(to_read, self._read(server, to_read) if to_read else ()):
            try:
                if isinstance(contents, SMCPError):
                    raise contents
                fresh[uri] = self._value_of(server, contents)
            except SMCPError as exc:
                fresh[uri] = self._unreadable(server, uri, exc)
        lasting = {u: v for u, v in fresh.items() if not (isinstance(v, _Unreadable) and v.transient)}
        if ticket is not None and lasting:
            self.cache.store(server, lasting, ticket)
        return {**values, **fresh}

    def _unreadable(self, server: str, uri: str, exc: SMCPError) -> _Unreadable:
        log.warning("%s: leaving out %s of MCP server %r: %s", self.name, uri, server, exc.message)
        return _Unreadable(exc.message, transient=isinstance(exc, SMCPTimeoutError))
