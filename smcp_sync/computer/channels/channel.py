"""One context channel of the Computer: the MCP resources of one URI scheme (`window://`
for the Desktop, `dpe://` for the Finder), the values read from them, and which MCP
server owns a URI host.

Desktop, Finder and Skills are one mechanism (docs/ARCHITECTURE.md, Layers); a channel is parameterised by
its scheme, by which listed resources are its entries (every `window://` and `dpe://`
one; only the package roots among `skill://` ones), by how one becomes a value (a
window's contents, a document's Level 1 summary, a staged SKILL package) and by the
event that announces its changes. `ResourceWatch` keeps the
listings current and drives the background warm-up (`subscribe_ahead` and `warm`, on the
`Warmer`'s threads): every listed resource the Computer can subscribe to is subscribed
to and read once, in batches (`ServerManager.read_resources`), then served from the
`UriCache` until a change notice drops it and queues it to be read again.

Why warm in the background: a cold Finder of thousands of documents takes longer to read
than the Server waits for an answer. A reader (`entries`) waits at most `wait` seconds
for the warm-up, then answers with what is read and says it is not `complete`; the
cache then owes the office the channel's update event, sent once the rest is read. What
cannot be cached (a server without subscriptions) is read on demand, as before.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Generic, Mapping, NamedTuple, Sequence, TypeVar
from urllib.parse import urlsplit

import attrs

from ...protocol.errors import SMCPError, SMCPTimeoutError
from ...protocol.models import Resource
from .exposure import names_a_secret
from .uri_cache import CacheWatcher, Ticket, UriCache

log = logging.getLogger(__name__)

V = TypeVar("V")

#: Reads listed resources: ``read(server, uris) -> [contents or SMCPError, ...]`` in order.
ReadMany = Callable[[str, Sequence[str]], Sequence[Any]]
#: Whether a listed URI is worth reading: ``check(uri)`` raises `SMCPError` if not.
Check = Callable[[str], object]
#: A read resource's value: ``value_of(server, contents) -> value``; raises `SMCPError`.
ValueOf = Callable[[str, Any], V]
#: Subscribes to resources: ``subscribe(server, uris) -> the URIs the server accepted``.
Subscribe = Callable[[str, Sequence[str]], "set[str]"]
#: What a channel needs of a listed resource itself: ``describe(server, resource) -> details``.
Describe = Callable[[str, Resource], Any]
#: The entries among a server's listed resources of the channel's scheme, in listing
#: order, each with what the channel needs of it: ``survey(server, resources) -> {uri: details}``.
Survey = Callable[[str, Sequence[Resource]], Mapping[str, Any]]


def scheme_and_host(uri: str) -> tuple[str, str] | None:
    """The lower-case scheme and the host (maybe empty) of ``scheme://host/...``, also of a
    URI template whose placeholders are in the path; None when `uri` has no scheme."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    return (parts.scheme.lower(), parts.netloc) if parts.scheme else None


class Entry(NamedTuple):
    """A listed resource and its value. A tuple: a catalogue makes thousands per request."""

    server: str
    uri: str
    value: Any
    #: What `describe` read from the listed resource (None without `describe`).
    details: Any = None


@attrs.frozen
class Gathered(Generic[V]):
    """What a reader gets: the entries, and whether any were left out because they were
    still being read in the background (then the channel's update event follows)."""

    entries: list[Entry]
    complete: bool = True


@attrs.frozen
class Settled:
    """Where a reader stands once the warm-up had its `wait`: the URIs each server lists
    (of the one asked for, if any), the values read for this reader alone (not cacheable,
    or not read before; readable ones only), and whether nothing was left out."""

    listed: dict[str, tuple[str, ...]]
    read_now: dict[str, dict[str, Any]]
    complete: bool


@attrs.frozen
class WarmStep:
    """One step of the warm-up of a server: whether there was anything to do, and whether
    the channel now owes the office its update event."""

    worked: bool
    announce: bool = False


@attrs.frozen
class _Unreadable:
    """A listed resource that could not be turned into a value, and why."""

    reason: str
    #: Not cached: a timeout may answer next time.
    transient: bool = False


def _survey_each(describe: Describe | None) -> Survey:
    """Every listed resource of the scheme is an entry, described by `describe` (if any)."""
    if describe is None:
        return lambda server, mine: dict.fromkeys(resource.uri for resource in mine)
    return lambda server, mine: {resource.uri: describe(server, resource) for resource in mine}


class ResourceChannel(Generic[V]):
    def __init__(
        self,
        name: str,
        scheme: str,
        update_event: str,
        read: ReadMany,
        check: Check,
        value_of: ValueOf[V],
        wait: float = 0.0,
        describe: Describe | None = None,
        survey: Survey | None = None,
        watcher: CacheWatcher | None = None,
        warm_lane: str = "shared",
        on_halt: Callable[[], None] | None = None,
    ) -> None:
        """`describe` reads each listed resource of the scheme; `survey` (instead) picks
        the entries from the whole listing of the scheme and describes them. `watcher`
        keeps a structure of the channel's own over the cached values (`UriCache`).
        `warm_lane`: the `Warmer` thread reading its values (a channel whose reads may be
        slow has one of its own); `on_halt`: called by `halt`, to abort reads under way."""
        self.name = name
        self.scheme = scheme
        self.update_event = update_event
        self.watcher = watcher
        self.cache = UriCache(watcher)
        self._read_many = read
        self._check = check
        self._value_of = value_of
        #: Seconds a reader waits for values the warm-up is still reading.
        self.wait = wait
        self._survey = survey if survey is not None else _survey_each(describe)
        self.warm_lane = warm_lane
        self._on_halt = on_halt
        self._closing = False
        self._warned = threading.Lock()
        self._clashes_warned: set[tuple[str, ...]] = set()

    def __repr__(self) -> str:
        return f"<ResourceChannel {self.name} {self.scheme}://>"

    def accepts(self, uri: str) -> bool:
        found = scheme_and_host(uri)
        return found is not None and found[0] == self.scheme

    def listed(self, server: str, generation: int, resources: Sequence[Resource], subscribable: bool) -> bool:
        """Record the resources of this channel's scheme in `server`'s listing (described,
        when the channel needs more than URIs); True when that changed what it shows. The
        survey sees the whole listing (a package's files include its `.skillenv`, staged
        for its scripts); an entry that names a secret file is never one (`exposure`)."""
        surveyed = self._survey(server, [resource for resource in resources if self.accepts(resource.uri)])
        details = {uri: found for uri, found in surveyed.items() if not names_a_secret(uri)}
        return self.cache.replace(server, generation, list(details), subscribable, details)

    def entries(self, servers: Sequence[str], uri: str | None = None) -> Gathered[V]:
        """The values of the URIs `servers` list (server order, then listing order), or of
        the listed `uri` alone. A resource that cannot be read is left out (logged, and
        reported by `diagnostics` while the failure is cached); so is one the warm-up has
        not read within `wait` seconds (then the result is not `complete`)."""
        settled = self.settle(servers, uri)
        found: list[Entry] = []
        for server, uris in settled.listed.items():
            values = {**settled.read_now[server], **self.cache.cached(server)[0]}
            details = self.cache.details(server)
            found.extend(
                Entry(server, u, values[u], details.get(u))
                for u in uris
                if u in values and not isinstance(values[u], _Unreadable)
            )
        return Gathered(found, settled.complete)

    def settle(self, servers: Sequence[str], uri: str | None = None, stale_ok: bool = False) -> Settled:
        """Read what the warm-up will not (see `entries`), and wait for the rest up to
        `wait` seconds; the values themselves are then the cache's (or the watcher's).
        `stale_ok`: do not wait for what change notices queue meanwhile (for a watcher
        that answers with a changed value as it was until it is read again; `wait_warm`)."""
        started = time.monotonic()
        listed = {server: self._listed(server, uri) for server in servers}
        read_now = {
            server: {u: v for u, v in self._read_unwarmed(server, uris).items() if not isinstance(v, _Unreadable)}
            for server, uris in listed.items()
        }
        complete = self.cache.wait_warm(servers, uri, self.wait - (time.monotonic() - started), stale_ok)
        return Settled(listed, read_now, complete)

    def _listed(self, server: str, uri: str | None) -> tuple[str, ...]:
        uris = self.cache.uris(server)
        return uris if uri is None else tuple(u for u in uris if u == uri)

    def subscribe_ahead(self, server: str, subscribe: Subscribe, limit: int) -> WarmStep:
        """Subscribe to up to `limit` of the URIs `server` has waiting for the warm-up; the
        accepted ones are then queued to be read (`warm`). A URI whose subscription is
        refused is not read: it could not be cached, so readers read it on demand."""
        batch = self.cache.take_subscribing(server, limit)
        if batch is None:
            return WarmStep(worked=False)
        accepted: set[str] = set()
        try:
            if not self._closing:
                accepted = subscribe(server, batch.uris)
        finally:
            announce = self.cache.subscribed(server, batch.generation, accepted, asked=batch.uris)
        return WarmStep(worked=True, announce=announce)

    def warm(self, server: str, limit: int) -> WarmStep:
        """Read (then cache) up to `limit` of the subscribed URIs `server` has waiting for
        the warm-up (once `halt`ed, what the requests give is dropped)."""
        batch = self.cache.take_warming(server, limit)
        if batch is None:
            return WarmStep(worked=False)
        try:
            ticket = self.cache.ticket(server)  # they are subscribed to: a change from now on is heard
            if ticket is not None and ticket.generation == batch.generation and not self._closing:
                self._read(server, batch.uris, ticket)
        finally:
            announce = self.cache.finish(server, batch.generation, batch.uris)
        return WarmStep(worked=True, announce=announce)

    def details(self, server: str) -> Mapping[str, Any]:
        """What the channel's survey noted of each of `server`'s entries, by URI."""
        return self.cache.details(server)

    def listed_uris(self, server: str) -> tuple[str, ...]:
        return self.cache.uris(server)

    def changed(self, server: str, uri: str) -> None:
        """`uri` of `server` changed: its value is read again (`UriCache.invalidate`)."""
        self.cache.invalidate(server, uri)

    def forget(self, server: str) -> bool:
        """`server` is gone: drop what it listed; True when the channel showed any of it."""
        return self.cache.forget(server)

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
        left_out = [
            f"{self.name}: {uri} of MCP server {server!r} is left out: {value.reason}"
            for server, uri, value in self.cache.cached_values()
            if isinstance(value, _Unreadable)
        ]
        warming = [
            f"{self.name}: MCP server {server!r}: {left} of {listed} {self.scheme}:// resources are still being read"
            for server, left, listed in self.cache.progress()
        ]
        return left_out + warming

    def _read_unwarmed(self, server: str, uris: Sequence[str]) -> dict[str, V | _Unreadable]:
        """Read (and cache if cacheable) those of `uris` that have no value and that the
        warm-up is not reading: values that cannot be cached, or whose read failed."""
        missing, ticket = self.cache.unread(server, uris)
        return self._read(server, missing, ticket)

    def _read(self, server: str, uris: Sequence[str], ticket: Ticket | None) -> dict[str, V | _Unreadable]:
        """The value of each of `uris`, read all at once; cached unless they changed since
        `ticket` (None: not at all). A timeout is not cached: it may answer next time."""
        fresh: dict[str, V | _Unreadable] = {}
        to_read = []
        for uri in uris:
            try:
                self._check(uri)
            except SMCPError as exc:
                fresh[uri] = self._unreadable(server, uri, exc)
            else:
                to_read.append(uri)
        answers = self._read_many(server, to_read) if to_read else ()
        failures: dict[str, SMCPError] = {}
        for uri, contents in zip(to_read, answers):
            try:
                if isinstance(contents, SMCPError):
                    raise contents
                fresh[uri] = self._value_of(server, contents)
            except SMCPError as exc:
                failures[uri] = exc
        if self._closing:  # the MCP servers and the staging folder are going: failures are expected
            return {}
        fresh.update((uri, self._unreadable(server, uri, exc)) for uri, exc in failures.items())
        lasting = {u: v for u, v in fresh.items() if not (isinstance(v, _Unreadable) and v.transient)}
        if ticket is not None and lasting:
            self.cache.store(server, lasting, ticket)
        return fresh

    def halt(self) -> None:
        """The Computer is closing: what any read gives from now on (the warm-up's or a
        request's on demand) is dropped unlogged, its failures being the close's doing."""
        self._closing = True
        if self._on_halt is not None:
            self._on_halt()

    def _unreadable(self, server: str, uri: str, exc: SMCPError) -> _Unreadable:
        log.warning("%s: leaving out %s of MCP server %r: %s", self.name, uri, server, exc.message)
        return _Unreadable(exc.message, transient=isinstance(exc, SMCPTimeoutError))
