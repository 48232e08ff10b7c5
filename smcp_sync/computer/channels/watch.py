"""Keeps the resource channels in step with the MCP servers (docs/ARCHITECTURE.md, Threads; spec/desktop.md and
spec/finder.md "变化检测").

* A running server with the `resources` capability is enumerated (every page of
  `resources/list`) once per session; each channel gets the URIs of its scheme. When the
  server declares `resources.subscribe`, the `Warmer` then subscribes to each of them
  and reads it into the channel's cache, in the background.
* `resources/list_changed` → list again and compare each channel's URI set: a channel
  whose set did not change is not announced. The listing runs on the server's own lane
  (`relisting`), retried with backoff until it succeeds or the server goes away.
  `resources/updated` for a channel's scheme → that channel changed (its cached value
  dropped and read again in the background), no comparison needed.
* A server that stops, crashes or is removed leaves the channels (a change if it had URIs).
* Changes reach the office through a `Debouncer`: one announcement per channel per burst;
  so does the announcement a channel owes for an answer given before it was warm.

Why subscriptions are not awaited: listing is one request per server, subscribing is one
per URI (10,000 for a big catalogue); a value is cached only once its subscription is
accepted and read after that, so nothing can go stale meanwhile, and a Computer can join
its office as soon as its servers are listed.

`on_server_events` runs on the Computer's event thread and never blocks on an MCP
server: invalidations are done there, listings handed to the server's lane. Listings
run on the lanes (never on the loop, so blocking MCP requests are fine there), and on a
reader's thread (`current_servers`), so that a `get_finder` right after a server
connected does not depend on a lane having caught up. A per-server lock keeps the two
from enumerating one server at the same time; the state of a server is only touched
while holding its lock.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Sequence

from ...protocol.errors import NotFoundError, SMCPError
from ...threads.debounce import Debouncer
from ..mcp.manager import ServerManager
from ..mcp.status import ServerEvent, ServerStatus
from .channel import ResourceChannel
from .relisting import RelistLanes
from .warmer import Warmer

log = logging.getLogger(__name__)

#: Seconds of quiet after a change before it is announced (a burst becomes one announcement).
DEFAULT_DEBOUNCE = 0.2
#: A stream of changes is still announced at least this often (seconds).
MAX_ANNOUNCE_DELAY = 1.0

#: Server events after which a server's place in the channels is checked.
_LIFECYCLE = frozenset({"connected", "disconnected", "config_changed"})


def _participates(status: ServerStatus) -> bool:
    return status.running and status.capabilities is not None and status.capabilities.resources


class ResourceWatch:
    def __init__(
        self,
        name: str,
        manager: ServerManager,
        channels: Sequence[ResourceChannel[Any]],
        announce: Callable[[str], None],
        timeout: float,
        debounce: float = DEFAULT_DEBOUNCE,
    ) -> None:
        self._manager = manager
        self._channels = tuple(channels)
        self._timeout = timeout
        max_delay = max(debounce, MAX_ANNOUNCE_DELAY)
        self._debouncer: Debouncer[ResourceChannel[Any]] = Debouncer(name, lambda channel: announce(channel.update_event), debounce, max_delay)
        lanes = list(dict.fromkeys(channel.warm_lane for channel in self._channels)) or ["shared"]
        self._warmer = Warmer(name, self._subscribe, self._debouncer.trigger, lanes=lanes)
        self._locks_guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._known: dict[str, int] = {}  # server -> generation the channels hold the listing of
        self._lanes = RelistLanes(name, self._sync)

    def start(self) -> None:
        self._warmer.start()

    def halt_warm_up(self) -> None:
        """Read nothing more in the background, and drop what reads under way give; call
        before stopping the MCP servers."""
        self._warmer.halt()
        self._lanes.halt()
        for channel in self._channels:
            channel.halt()

    def stop(self, timeout: float) -> None:
        self._lanes.stop(timeout)
        self._warmer.stop(timeout)
        self._debouncer.stop(timeout)

    def discard_pending(self) -> None:
        """Forget changes not yet announced: agents that just saw this Computer enter the
        office fetch its Desktop and Finder anyway, so an update notice would be noise."""
        self._debouncer.discard_pending()

    def on_server_events(self, events: Sequence[ServerEvent]) -> None:
        """Handle one batch of the event thread: a burst costs one listing per server."""
        relist: dict[str, bool] = {}
        for event in events:
            if event.kind == "resource_updated" and event.uri is not None:
                self._updated(event.server, event.uri)
            elif event.kind == "resources_list_changed":
                relist[event.server] = True
            elif event.kind in _LIFECYCLE:
                relist.setdefault(event.server, False)
        for server, again in relist.items():
            if self._lanes.has(server) or self._participating(server):
                self._lanes.ask(server, again)
            else:  # nothing to list: at most forgotten, at once
                self._sync(server, relist=again)

    def settle(self, server: str, timeout: float) -> bool:
        """Wait (up to `timeout`) until the listings `server`'s notices asked for so far
        are done; False if one is still under way or being retried."""
        return self._lanes.settle(server, timeout)

    def current_servers(self) -> list[str]:
        """The running servers with resources, in configuration order, each enumerated for
        its current session (done here if the event thread has not got to it yet)."""
        servers = []
        for _, status in self._manager.snapshot():
            if _participates(status):
                self._lanes.open(status.bundle_id)
                if self._known.get(status.bundle_id) != status.generation:
                    if not self._sync(status.bundle_id, relist=False):
                        self._lanes.ask(status.bundle_id, False)  # retried there
                servers.append(status.bundle_id)
        return servers

    # -- internals ------------------------------------------------------------------------

    def _updated(self, server: str, uri: str) -> None:
        for channel in self._channels:
            if channel.accepts(uri):
                channel.changed(server, uri)
                self._debouncer.trigger(channel)
                self._warmer.wake(channel, server)

    def _participating(self, server: str) -> bool:
        try:
            return _participates(self._manager.status(server))
        except NotFoundError:  # removed
            return False

    def _sync(self, server: str, relist: bool) -> bool:
        """Bring the channels up to date with `server`; False if its listing failed."""
        lock = self._lock_for(server)
        if not lock.acquire(timeout=self._timeout):
            log.warning("resources of MCP server %r are still being listed; answering with what is known", server)
            return False
        try:
            try:
                status = self._manager.status(server)
            except NotFoundError:  # removed
                status = None
            if status is None or not _participates(status):
                self._forget(server)
            elif relist or self._known.get(server) != status.generation:
                return self._enumerate(server, status)
            return True
        finally:
            lock.release()

    def _enumerate(self, server: str, status: ServerStatus) -> bool:
        try:
            resources = self._manager.list_resources(server, self._timeout)
        except SMCPError as exc:
            log.warning("cannot list the resources of MCP server %r: %s", server, exc.message)
            if self._known.get(server) != status.generation:
                self._forget(server)
            return False
        can_subscribe = status.capabilities is not None and status.capabilities.resources_subscribe
        for channel in self._channels:
            if channel.listed(server, status.generation, resources, subscribable=can_subscribe):
                count = len(channel.listed_uris(server))
                log.info("%s: MCP server %r lists %d %s:// URIs now", channel.name, server, count, channel.scheme)
                self._debouncer.trigger(channel)
            else:
                log.debug("%s: the %s:// URIs of MCP server %r did not change", channel.name, channel.scheme, server)
            if can_subscribe:
                self._warmer.wake(channel, server)
        self._known[server] = status.generation
        return True

    def _subscribe(self, server: str, uris: Sequence[str]) -> set[str]:
        """The URIs of `uris` the server accepted a subscription to (asked all at once)."""
        outcomes = self._manager.subscribe_resources(server, uris, self._timeout)
        refused = [(uri, failure) for uri, failure in zip(uris, outcomes) if failure is not None]
        if refused and not self._warmer.halted:  # else: refused because the servers are stopping
            uri, failure = refused[0]
            log.warning(
                "MCP server %r refused %d subscription(s), e.g. to %s: %s", server, len(refused), uri, failure.message
            )
        return {uri for uri, failure in zip(uris, outcomes) if failure is None}

    def _forget(self, server: str) -> None:
        self._known.pop(server, None)
        for channel in self._channels:
            if channel.forget(server):
                self._debouncer.trigger(channel)

    def _lock_for(self, server: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(server, threading.Lock())
