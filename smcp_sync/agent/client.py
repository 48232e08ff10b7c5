"""`Agent`: the A2C-SMCP Agent role as a blocking, thread-safe Python object.

Every method blocks until the answer (or its timeout) and may be called from many
threads at once; nothing here needs `await`, so it works unchanged in Flask/Django
views, scripts, worker threads and Jupyter cells (docs/ARCHITECTURE.md, Threads).

Caches: `tool_cache` holds each Computer's tools, kept current by the notifications
(`enter_office`, `update_config`, `update_tool_list` re-fetch; `leave_office` drops),
by every `get_tools` answer, and by a re-read of the office after `join_office` and
after each automatic re-join. The re-fetches run in the background (`refresher`: one
lane per Computer), never on the dispatcher thread: a notification's callbacks run at
once, whatever its Computer's answer costs, and a slow or silent Computer delays only
its own refreshes. Desktops and Finder catalogues are fetched on demand by
`get_desktop` / `get_finder`; `skill_cache` holds each Computer's skills (`skills`),
re-fetched like the tools on `enter_office` and `update_skills`.
With `prefetch_desktop=True` (`prefetch_finder=True`) the
Agent also re-fetches a Computer's desktop (its first catalogue page, unfiltered) when
it enters or reports `update_desktop` (`update_finder`), into `desktop_cache`
(`finder_cache`). Resource reads and the Finder navigation helpers live in `resources`
and `finder_navigation`.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any, Callable, Mapping

from ..connection.credentials import AuthSource
from ..connection.session import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_JOIN_TIMEOUT,
    Connection,
    NotConnectedError,
    ReconnectPolicy,
)
from ..protocol import events
from ..protocol.conventions import DEFAULT_TOOL_TIMEOUT
from ..relay.link import link_for
from ..relay.place import RelayPlace
from ..relay.transport import RelayConnection
from ..protocol.errors import NotFoundError, OfficeError, SMCPError
from ..protocol.extensions import ExtensionNotSupportedError
from ..protocol.models import (
    A2CSkillRef,
    CallToolResult,
    Desktop,
    GetComputerConfigReq,
    GetComputerConfigRet,
    GetDeskTopReq,
    GetDeskTopRet,
    GetFinderRet,
    GetToolsReq,
    GetToolsRet,
    ListRoomReq,
    ListRoomRet,
    SessionList,
    SMCPTool,
    ToolList,
)
from ..protocol.redaction import redact_url
from ..threads.serial import SerialThread
from .blobs import BlobMethods
from .cache import ComputerCache
from .finder_navigation import FinderMethods
from .notifications import Notifications
from .refresher import Refresher
from .rehydrate import DEFAULT_REHYDRATE_MAX_BYTES, BlobProgress, Rehydration
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, NotHandledError, ask, new_req_id
from .resources import ResourceMethods
from .skills import SkillMethods
from .tool_calls import DEFAULT_MAX_CONCURRENT_CALLS, ToolCallFuture, ToolCalls
from .transport import AgentTransport

logger = logging.getLogger(__name__)

#: Seconds `close` waits for a notification callback that is still running.
CALLBACK_STOP_TIMEOUT = 5.0
#: Seconds a background refresh (after a notification, a join, a re-join) waits for its
#: answer: how long a Computer that does not answer holds up its own refresh lane.
REFRESH_TIMEOUT = 10.0

_REFETCH_TOOLS = frozenset(
    {events.ENTER_OFFICE_NOTIFICATION, events.UPDATE_CONFIG_NOTIFICATION, events.UPDATE_TOOL_LIST_NOTIFICATION}
)
_REFETCH_DESKTOP = frozenset({events.ENTER_OFFICE_NOTIFICATION, events.UPDATE_DESKTOP_NOTIFICATION})
_REFETCH_FINDER = frozenset({events.ENTER_OFFICE_NOTIFICATION, events.UPDATE_FINDER_NOTIFICATION})
_REFETCH_SKILLS = frozenset({events.ENTER_OFFICE_NOTIFICATION, events.UPDATE_SKILLS_NOTIFICATION})


class Agent(FinderMethods, ResourceMethods, SkillMethods, BlobMethods):
    """An Agent named `name`; `auth` is the Socket.IO auth dict (e.g. ``{"token": key}``;
    `client_auth.key_auth(key)` puts it in every field a Server may read) or a callable
    returning it, asked again at every connect and reconnect (a token that rotates);
    `headers` extra HTTP headers for the connect request (e.g. ``{"access_token": key}``
    for an official 0.1.x Server). Binary tool-result items and skill files a Computer
    answers with a blob handle are fetched before a call returns, up to
    `rehydrate_max_bytes` per answer (`rehydrate_blobs=False`, or `rehydrate=False` on a
    call, keeps the handles: `rehydrate`); `rehydrate_progress(handle, done, total)`
    follows each such blob as it arrives. `transport` replaces the Agent's own Socket.IO
    session (`via_relay` gives the relay's)."""

    def __init__(
        self,
        name: str,
        auth: AuthSource = None,
        *,
        headers: Mapping[str, str] | None = None,
        prefetch_desktop: bool = False,
        prefetch_finder: bool = False,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
        rehydrate_blobs: bool = True,
        rehydrate_max_bytes: int = DEFAULT_REHYDRATE_MAX_BYTES,
        rehydrate_progress: BlobProgress | None = None,
        transport: AgentTransport | None = None,
    ):
        if not isinstance(name, str) or not name:
            raise ValueError("an Agent needs a non-empty name")
        self.name = name
        self.prefetch_desktop = prefetch_desktop
        self.prefetch_finder = prefetch_finder
        self._cache_callbacks: list[Callable[[str, str, Any], Any]] = []
        #: Each Computer's tools (tuples of `SMCPTool`), by computer name.
        self.tool_cache: ComputerCache[tuple[SMCPTool, ...]] = ComputerCache(self._cache_updated("tools"))
        #: Each Computer's desktop (tuples of window strings), filled with `prefetch_desktop`.
        self.desktop_cache: ComputerCache[tuple[Desktop, ...]] = ComputerCache(self._cache_updated("desktop"))
        #: Each Computer's first unfiltered catalogue page, filled with `prefetch_finder`.
        self.finder_cache: ComputerCache[GetFinderRet] = ComputerCache(self._cache_updated("finder"))
        #: Each Computer's skills (tuples of `A2CSkillRef`), by computer name.
        self.skill_cache: ComputerCache[tuple[A2CSkillRef, ...]] = ComputerCache(self._cache_updated("skills"))
        if transport is not None and (auth is not None or headers is not None):
            raise ValueError("auth and headers belong to the transport when one is given")
        self._connection: AgentTransport = transport or Connection(
            "agent", name, auth=auth, headers=headers, reconnect=reconnect
        )
        self._dispatcher = SerialThread(f"smcp-agent-{name}-notify")
        self._refresher = Refresher(f"smcp-agent-{name}-refresh")
        #: Fills blob-backed tool-result items and skill files in (`rehydrate`).
        self._rehydration = Rehydration(self.get_blob, rehydrate_blobs, rehydrate_max_bytes, rehydrate_progress)
        self._tool_calls = ToolCalls(self._connection, max_concurrent_calls, self._rehydration)
        self._notifications = Notifications(self._connection, self._dispatch, self._react)
        self._connection.on_rejoined(lambda office_id: self._request_resync())

    @classmethod
    def via_relay(
        cls,
        name: str,
        *,
        url: str,
        office_id: str,
        auth: AuthSource = None,
        headers: Mapping[str, str] | None = None,
        relay_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Agent:
        """An Agent that shares the seat `name` in `office_id` at `url` with every process
        of this host through the Agent relay (gunicorn or Celery workers, Django's
        reloader pair: an office admits one Agent). Same methods as a direct Agent; the
        relay (in `relay_dir`, default `relay.place.default_folder()`) is started by the
        first call that needs it, the seat opened by each process's first call, and a
        forked child attaches again by itself. `options` are the Agent's (e.g.
        `prefetch_desktop`). docs/hosts/relay.md."""
        transport = RelayConnection(
            name, url=url, office_id=office_id, auth=auth, headers=headers,
            link=link_for(RelayPlace.at(relay_dir)),
        )  # fmt: skip
        agent = cls(name, transport=transport, **options)
        agent._start_workers()  # no connect(): the relay's seat is opened by the first call
        return agent

    def _start_workers(self) -> None:
        """Start the threads of callbacks and refreshes (in a forked child they forget the
        parent's and start their own when used: `threads.forks`)."""
        self._dispatcher.start()
        self._refresher.start()

    def _dispatch(self, work: Callable[..., Any], *args: Any) -> bool:
        return self._dispatcher.submit(work, *args)

    def __repr__(self) -> str:
        return f"<Agent {self.name!r} url={self._connection.url and redact_url(self._connection.url)!r} office={self.office_id!r}>"

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connection.connected

    @property
    def office_id(self) -> str | None:
        return self._connection.office_id

    def connect(self, url: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        """Connect to the Server at `url` (websocket). Raises `AuthError` when refused,
        `VersionMismatchError` when it speaks another protocol version (no retry),
        `NotConnectedError` when unreachable."""
        self._start_workers()
        try:
            self._connection.connect(url, timeout)
        except BaseException:
            self._refresher.close(CALLBACK_STOP_TIMEOUT)
            self._dispatcher.stop(CALLBACK_STOP_TIMEOUT)
            raise

    def close(self) -> None:
        """Cancel the tool calls waiting for their answers, disconnect and stop every
        thread the Agent started. Idempotent."""
        self._tool_calls.cancel_in_flight()
        self._connection.close()
        self._tool_calls.close()
        self._refresher.close(CALLBACK_STOP_TIMEOUT)
        self._dispatcher.stop(CALLBACK_STOP_TIMEOUT)
        self._clear_caches()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- office --------------------------------------------------------------------------

    def join_office(self, office_id: str, timeout: float = DEFAULT_JOIN_TIMEOUT) -> None:
        """Join `office_id`; a refusal raises its `SMCPError` (4101: the office already has
        an Agent). The tool cache then fills in the background from the office's
        Computers; `get_tools` asks directly."""
        self._connection.join_office(office_id, timeout)
        self._clear_caches()
        self._request_resync()

    def leave_office(self, timeout: float = DEFAULT_JOIN_TIMEOUT) -> None:
        self._connection.leave_office(timeout)
        self._clear_caches()

    def list_room(self, timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT) -> SessionList:
        """Every session (Agent and Computers) in the Agent's office."""
        office_id = self.office_id
        if office_id is None:
            raise OfficeError("join an office before listing it", code=4103)
        request = ListRoomReq(agent=self.name, req_id=new_req_id(), office_id=office_id)
        return SessionList(ask(self._connection, events.LIST_ROOM, request, ListRoomRet, timeout).sessions)

    # -- requests to a Computer -----------------------------------------------------------

    def get_tools(self, computer: str, timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT) -> ToolList:
        """The Computer's tools (also stored in `tool_cache`)."""
        ticket = self.tool_cache.ticket()
        request = GetToolsReq(agent=self.name, req_id=new_req_id(), computer=computer)
        tools = ask(self._connection, events.GET_TOOLS, request, GetToolsRet, timeout).tools
        self.tool_cache.store(computer, tuple(tools), ticket)
        return ToolList(tools)

    def get_config(self, computer: str, timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT) -> GetComputerConfigRet:
        request = GetComputerConfigReq(agent=self.name, req_id=new_req_id(), computer=computer)
        return ask(self._connection, events.GET_CONFIG, request, GetComputerConfigRet, timeout)

    def get_desktop(
        self,
        computer: str,
        desktop_size: int | None = None,
        window: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> list[Desktop]:
        """The Computer's desktop: rendered windows, most relevant first; `desktop_size`
        caps their number, `window` asks for one window URI."""
        ticket = self.desktop_cache.ticket()
        request = GetDeskTopReq(
            agent=self.name, req_id=new_req_id(), computer=computer, desktop_size=desktop_size, window=window
        )
        desktops = ask(self._connection, events.GET_DESKTOP, request, GetDeskTopRet, timeout).desktops
        if desktop_size is None and window is None and self.prefetch_desktop:
            self.desktop_cache.store(computer, tuple(desktops), ticket)
        return desktops

    # -- tool calls ------------------------------------------------------------------------

    def call_tool(
        self,
        computer: str,
        tool_name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        rehydrate: bool | None = None,
    ) -> CallToolResult:
        """Call `tool_name` on `computer` and wait for its result. A tool that fails
        (unknown, disabled, raised, timed out on the Computer) is a result with
        `is_error` and `error_code`; protocol failures raise `SMCPError`s; when no answer
        comes within `timeout` + a buffer the call is cancelled and `SMCPTimeoutError`
        raised. Whatever else ends the wait (KeyboardInterrupt, SystemExit, `close()`
        from another thread) cancels the call too before it propagates (`tool_calls`). Blob-backed items come filled in unless `rehydrate` (None: the Agent's
        `rehydrate_blobs`) is false."""
        return self._tool_calls.call(computer, tool_name, params, timeout, rehydrate=rehydrate)

    def submit_tool_call(
        self,
        computer: str,
        tool_name: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        *,
        rehydrate: bool | None = None,
    ) -> ToolCallFuture:
        """`call_tool` in the background: a `concurrent.futures.Future` of the
        `CallToolResult`, with the request's id as `future.req_id`."""
        return self._tool_calls.submit(computer, tool_name, params, timeout, rehydrate=rehydrate)

    def cancel_tool_call(self, req_id: str) -> None:
        """Cancel a submitted call: dropped if not started yet, otherwise the Computer is
        told to stop and the call answers with a cancelled (`is_error`) result."""
        self._tool_calls.cancel(req_id)

    # -- notifications ----------------------------------------------------------------------

    def on(self, event_name: str, callback: Callable[[Any], Any]) -> None:
        """Call `callback(notification)` for each `notify:*` event `event_name`; the
        argument is the event's model (e.g. `EnterOfficeNotification`). Callbacks run one
        at a time on the Agent's dispatcher thread, in arrival order, and may call the
        Agent. They run as soon as the notification arrives: the cache refresh it causes
        goes on in the background and is reported to `on_cache_update` callbacks; a
        leaving Computer is already dropped from the caches."""
        self._notifications.on(event_name, callback)

    def on_rejoin_failed(self, callback: Callable[[str, SMCPError], Any]) -> None:
        """Call `callback(office_id, error)` when the Agent, reconnected after a drop,
        gives up re-joining its office (refused for good, or still refused after a minute
        of retries: docs/server/scale-out.md); it stays connected, in no office. Runs on a
        Socket.IO thread: keep it short."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self._connection.on_rejoin_failed(callback)

    def on_cache_update(self, callback: Callable[[str, str, Any], Any]) -> None:
        """Call `callback(kind, computer, value)` each time a cache keeps a new value:
        `kind` is ``"tools"``, ``"desktop"``, ``"finder"`` or ``"skills"``, `value` what the cache now
        holds for `computer`. Runs on the dispatcher thread like the notification
        callbacks, after those of the notification that caused the refresh: the way to
        act on a Computer's new tools without waiting for them."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self._cache_callbacks.append(callback)

    def _cache_updated(self, kind: str) -> Callable[[str, Any], None]:
        def updated(computer: str, value: Any) -> None:
            for callback in list(self._cache_callbacks):
                self._dispatcher.submit(callback, kind, computer, value)

        return updated

    def _react(self, event: str, notification: Any) -> None:
        computer = getattr(notification, "computer", None)
        if computer is None:  # an Agent entering/leaving, a tool-call cancel
            return
        if event == events.LEAVE_OFFICE_NOTIFICATION:
            self._refresher.forget(("computer", computer))
            self._refresher.forget(("skills", computer))
            self._forget(computer)
            return
        self._request_refresh(
            computer,
            tools=event in _REFETCH_TOOLS,
            desktop=event in _REFETCH_DESKTOP and self.prefetch_desktop,
            finder=event in _REFETCH_FINDER and self.prefetch_finder,
            skills=event in _REFETCH_SKILLS,
        )

    def _request_refresh(self, computer: str, *, tools: bool, desktop: bool, finder: bool, skills: bool) -> None:
        """Re-fetch the chosen caches of `computer` on its refresh lane; its skills on a
        lane of their own, since a Computer of an older protocol may never answer them and
        must not hold up its tool refreshes meanwhile."""
        jobs: dict[str, Callable[[], None]] = {}
        for kind, wanted, fetch in (
            ("tools", tools, self.get_tools),
            ("desktop", desktop, self.get_desktop),
            ("finder", finder, self.get_finder),
        ):
            if wanted:
                jobs[kind] = functools.partial(self._refresh, computer, fetch)
        self._refresher.request(("computer", computer), jobs)
        if skills:
            skills_job = functools.partial(self._refresh, computer, self.get_skills)
            self._refresher.request(("skills", computer), {"skills": skills_job})

    def _request_resync(self) -> None:
        self._refresher.request(("office",), {"resync": self._resync})

    def _resync(self) -> None:
        """Re-read the office (on the office's refresh lane): refresh every Computer
        present, forget those gone."""
        try:
            sessions = self.list_room(REFRESH_TIMEOUT)
        except NotConnectedError:
            return  # closing, or reconnecting: the re-join resyncs again
        except SMCPError as exc:
            logger.warning("agent %r could not list office %r: %s", self.name, self.office_id, exc)
            return
        present = {session.name for session in sessions if session.role == "computer"}
        for computer in set(self.tool_cache.computers()) - present:
            self._forget(computer)
        for computer in sorted(present):
            self._request_refresh(
                computer, tools=True, desktop=self.prefetch_desktop, finder=self.prefetch_finder, skills=True
            )

    def _refresh(self, computer: str, fetch: Callable[..., Any]) -> None:
        try:
            fetch(computer, timeout=REFRESH_TIMEOUT)
        except (ExtensionNotSupportedError, NotHandledError):
            pass  # a Finder prefetch from an official Computer, skills from a 0.1.x one: it is still here
        except (NotFoundError, OfficeError):
            self._forget(computer)  # left, or we did: nothing to cache
        except NotConnectedError:
            pass  # closing, or reconnecting: the re-join resyncs
        except SMCPError as exc:
            logger.warning("agent %r could not refresh computer %r: %s", self.name, computer, exc)

    def _forget(self, computer: str) -> None:
        self.tool_cache.drop(computer)
        self.desktop_cache.drop(computer)
        self.finder_cache.drop(computer)
        self.skill_cache.drop(computer)

    def _clear_caches(self) -> None:
        self.tool_cache.clear()
        self.desktop_cache.clear()
        self.finder_cache.clear()
        self.skill_cache.clear()
