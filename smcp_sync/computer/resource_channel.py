"""One context channel of the Computer: the MCP resources of one URI scheme (`window://`
for the Desktop, `dpe://` for the Finder), the values read from them, and which MCP
server owns a URI host.

Desktop and Finder are one mechanism (DESIGN §2); a channel is parameterised by its
scheme, by how one listed resource becomes a value (a window's contents, a document's
Level 1 summary) and by the event that announces its changes. `ResourceWatch` keeps the
listings current; a channel reads values on demand, through its `UriCache`, so a value
is read once and then served from the cache until a change notice drops it.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Generic, Sequence, TypeVar
from urllib.parse import urlsplit

import attrs

from ..protocol.errors import SMCPError, SMCPTimeoutError
from .uri_cache import MISSING, UriCache

log = logging.getLogger(__name__)

V = TypeVar("V")

#: Reads one listed resource: ``load(server, uri) -> value``; raises `SMCPError`.
Load = Callable[[str, str], V]


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


class ResourceChannel(Generic[V]):
    def __init__(self, name: str, scheme: str, update_event: str, load: Load[V]) -> None:
        self.name = name
        self.scheme = scheme
        self.update_event = update_event
        self.cache = UriCache()
        self._load = load
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
            for listed in self.cache.uris(server):
                if uri is None or listed == uri:
                    value = self._value(server, listed)
                    if not isinstance(value, _Unreadable):
                        found.append(Entry(server, listed, value))
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

    def _value(self, server: str, uri: str) -> V | _Unreadable:
        value, ticket = self.cache.lookup(server, uri)
        if value is not MISSING:
            return value
        try:
            value = self._load(server, uri)
        except SMCPError as exc:
            log.warning("%s: leaving out %s of MCP server %r: %s", self.name, uri, server, exc.message)
            if isinstance(exc, SMCPTimeoutError):
                return _Unreadable(exc.message)  # not cached: it may answer next time
            value = _Unreadable(exc.message)
        if ticket is not None:
            self.cache.store(server, uri, value, ticket)
        return value
