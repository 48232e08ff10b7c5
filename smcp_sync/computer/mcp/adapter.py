"""The one module that imports the `mcp` SDK (docs/ARCHITECTURE.md, Library facts): connect, talk, convert
(`oauth` holds the SDK's OAuth client, which this module only receives as an `httpx2.Auth`).

Everything crossing this boundary is converted: tools become `ServerTool`, results our
`CallToolResult`, resources our `Resource` / `ResourceContents`, completions our
`Completion`, and every SDK failure one of the `McpFailure` classes below. So the rest of
the Computer never sees an `mcp` type, and an SDK upgrade touches only this file.

SDK facts this relies on (mcp 2.x, measured): `ClientSession` needs an explicit
`initialize()`; a dead connection surfaces as `MCPError(CONNECTION_CLOSED)`; cancelling
the awaiting task sends `notifications/cancelled`; the SDK does not say when a
connection ends, hence the EOF-watching read stream; `stdio_client` needs a real
`errlog` file. `resources/subscribe` is sent as a plain request because the SDK's
`subscribe_resource` helper is deprecated (it warns) while 2025-era servers, the ones
that push resource notifications, need exactly that request.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Literal, TypeVar, overload

import anyio
import httpx2
import mcp.types as mcp_types
import pydantic
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters as SdkStdioParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage

from ..._version import __version__
from ...protocol.codec import from_wire
from ...protocol.errors import BadRequestError
from ...protocol.models import (
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    MCPServerConfig,
    Resource,
    ResourceContents,
    ResourceTemplateReference,
    SseServerConfig,
    StdioServerConfig,
)
from ...protocol.redaction import redact_text
from ..config.env_file import spawn_environment
from .client_features import (
    ClientHandlers,
    ClientRequestRefused,
    Elicitation,
    FormElicitation,
    SamplingRequest,
    UrlElicitation,
)
from .status import ServerCapabilities, ServerTool
from .stderr_pipe import StderrTail, stderr_pipe
from .upstream_auth import AuthStatusTransport

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A list (tools, resources) longer than this many pages is a misbehaving server.
MAX_PAGES = 1000
#: Refused SSE requests waiting for the session to read their errors (more are dropped:
#: their calls time out).
_MAX_REFUSALS = 64

NotificationKind = Literal["tools_changed", "resources_list_changed", "resource_updated", "transport_fault", "closed"]
#: Called on the loop for each server notification; must not block.
OnNotification = Callable[[NotificationKind, "str | None"], None]


#: MCP's JSON-RPC code for an unknown resource (revisions up to 2025-11-25; later ones use -32602).
RESOURCE_NOT_FOUND = -32002
#: JSON-RPC codes of a server refusing the request itself (unknown method, bad arguments).
METHOD_NOT_FOUND = mcp_types.METHOD_NOT_FOUND
INVALID_PARAMS = mcp_types.INVALID_PARAMS


class McpFailure(Exception):
    """An MCP server interaction failed. When the server answered with a JSON-RPC error,
    `code` and `data` are that error's and `server_message` its own message (`message`
    adds what was being done)."""

    def __init__(
        self, message: str, code: int | None = None, *, data: Any = None, server_message: str | None = None
    ) -> None:
        message = redact_text(message)  # it may quote a URL, and it goes to logs and Agents
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data
        self.server_message = None if server_message is None else redact_text(server_message)


class McpConnectionLost(McpFailure):
    """The connection to the MCP server is gone (crash, exit, network)."""


class McpRequestFailed(McpFailure):
    """The server answered with an error, or with something that is not a valid answer."""


@contextlib.asynccontextmanager
async def open_session(
    config: MCPServerConfig,
    *,
    on_notification: OnNotification,
    stderr_tail: StderrTail,
    init_timeout: float,
    auth: httpx2.Auth | None = None,
    client: ClientHandlers | None = None,
) -> AsyncIterator[McpSession]:
    """Connect to the server of `config` and yield an initialized session (an HTTP one
    through `auth`, if given: `oauth.session_auth`), answering the server's elicitation,
    sampling and roots requests through `client` (those it has no handler for are refused
    by the SDK, and not announced).

    Must be entered and exited by the same task (anyio cancel scopes).
    """

    async def on_message(message: Any) -> None:
        kind, uri = _classify(message)
        if kind is not None:
            on_notification(kind, uri)

    async with _transport(config, stderr_tail, auth) as (read_stream, write_stream):
        watched = _EofWatchedStream(read_stream, lambda: on_notification("closed", None))
        session = ClientSession(
            watched,
            write_stream,
            message_handler=on_message,
            client_info=mcp_types.Implementation(name="smcp_sync", version=__version__),
            **_client_callbacks(client, config.bundle_id or config.name),
        )
        async with session:
            with anyio.fail_after(init_timeout), _translated("initialize"):
                init = await session.initialize()
            yield McpSession(session, init, watched)


class McpSession:
    """An initialized MCP session, speaking our models."""

    def __init__(self, session: ClientSession, init: Any, stream: _EofWatchedStream) -> None:
        self._session = session
        self._stream = stream
        self.capabilities = _capabilities(init.capabilities)
        info = init.server_info
        self.server_info = f"{info.name} {info.version}".strip() if info is not None else None

    @property
    def closed(self) -> bool:
        return self._stream.ended

    async def ping(self) -> None:
        with _translated("ping"):
            await self._session.send_ping()

    async def list_tools(self) -> tuple[ServerTool, ...]:
        tools: list[ServerTool] = []
        async for page in self._pages("tools/list", self._session.list_tools):
            tools.extend(_server_tool(t) for t in page.tools)
        return tuple(tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        with _translated(f"tools/call {name!r}"):
            result = await self._session.call_tool(name, arguments)
        return _convert(CallToolResult, result, f"tools/call {name!r}")

    async def list_resources(self, cursor: str | None = None) -> tuple[list[Resource], str | None]:
        """One page of `resources/list` and the cursor of the next one."""
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        with _translated("resources/list"):
            page = await self._session.list_resources(params=params)
        resources = [_convert(Resource, r, "resources/list") for r in page.resources]
        return resources, page.next_cursor

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        with _translated(f"resources/read {uri!r}"):
            result = await self._session.read_resource(uri)
        return [_convert(ResourceContents, c, "resources/read") for c in result.contents]

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (``notifications/roots/list_changed``)."""
        with warnings.catch_warnings(), _translated("notifications/roots/list_changed"):
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots are deprecated after 2025-11-25
            await self._session.send_roots_list_changed()

    async def subscribe_resource(self, uri: str) -> None:
        request = mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=uri))
        with _translated(f"resources/subscribe {uri!r}"):
            await self._session.send_request(request, mcp_types.EmptyResult)

    async def complete(
        self, ref: CompletionReference, argument: CompletionArgument, context: CompletionContext | None = None
    ) -> Completion:
        if isinstance(ref, ResourceTemplateReference):
            sdk_ref: Any = mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref.uri)
        else:
            sdk_ref = mcp_types.PromptReference(type="ref/prompt", name=ref.name)
        context_arguments = context.arguments if context is not None else None
        with _translated("completion/complete"):
            result = await self._session.complete(
                sdk_ref, {"name": argument.name, "value": argument.value}, context_arguments
            )
        return _convert(Completion, result.completion, "completion/complete")

    async def _pages(self, what: str, fetch: Callable[..., Any]) -> AsyncIterator[Any]:
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            with _translated(what):
                page = await fetch(params=params)
            yield page
            if not page.next_cursor or page.next_cursor == cursor:
                return
            cursor = page.next_cursor
        raise McpRequestFailed(f"{what} did not end after {MAX_PAGES} pages")


def describe_failure(exc: BaseException) -> str:
    """A one-line, secret-free reason for a failed connection or request: what failed
    and where (status, host), credentials masked (`protocol.redaction`)."""
    return redact_text(_reason(exc))


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpFailure):
        return exc.message
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"  # no filename: no host paths in diagnostics
    if isinstance(exc, httpx2.HTTPStatusError):  # its text adds a line of advice
        response = exc.response
        return f"HTTP {response.status_code} {response.reason_phrase} from {exc.request.url}"
    if isinstance(exc, httpx2.HTTPError):
        return f"HTTP error: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"


# -- transports ------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _transport(config: MCPServerConfig, stderr_tail: StderrTail, auth: httpx2.Auth | None) -> AsyncIterator[Any]:
    if isinstance(config, StdioServerConfig):
        params = config.server_parameters
        # the envFile is read at each spawn (a restart sees its edits), off the loop
        server = config.bundle_id or config.name
        env = await anyio.to_thread.run_sync(spawn_environment, params.env, config.env_file, server)
        sdk_params = SdkStdioParameters(
            command=params.command,
            args=list(params.args),
            env=env,
            cwd=params.cwd,
            encoding=params.encoding,
            encoding_error_handler=params.encoding_error_handler,
        )
        async with stderr_pipe(stderr_tail, params.encoding) as errlog:
            async with stdio_client(sdk_params, errlog=errlog) as streams:
                errlog.close()  # the child has its copy; ours would hide the child's exit
                yield streams
    elif isinstance(config, SseServerConfig):
        sse = config.server_parameters
        refusals_in, refusals = anyio.create_memory_object_stream[Any](_MAX_REFUSALS)

        def refused(message: dict[str, Any]) -> None:
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                refusals_in.send_nowait(SessionMessage(mcp_types.JSONRPCError.model_validate(message)))

        def client(
            headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
        ) -> httpx2.AsyncClient:
            # AuthStatusTransport: a refused POST's error goes to the session (upstream_auth)
            transport = AuthStatusTransport(httpx2.AsyncHTTPTransport(), refused)
            return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, transport=transport)

        async with sse_client(
            sse.url,
            headers=_headers(sse.headers),
            timeout=sse.timeout,
            sse_read_timeout=sse.sse_read_timeout,
            auth=auth,
            httpx_client_factory=client,
        ) as (read_stream, write_stream):
            async with _merged(read_stream, refusals_in, refusals) as merged:
                yield merged, write_stream
    else:
        streamable = config.server_parameters
        timeout = httpx2.Timeout(streamable.timeout, read=streamable.sse_read_timeout)
        # AuthStatusTransport: a 401/403 to a tools/call keeps its status (upstream_auth).
        transport = AuthStatusTransport(httpx2.AsyncHTTPTransport())
        async with httpx2.AsyncClient(
            headers=_headers(streamable.headers), timeout=timeout, transport=transport, auth=auth
        ) as http:
            async with streamable_http_client(
                streamable.url, http_client=http, terminate_on_close=streamable.terminate_on_close
            ) as streams:
                yield streams


@contextlib.asynccontextmanager
async def _merged(stream: Any, extra_in: Any, extra: Any) -> AsyncIterator[Any]:
    """What `stream` and `extra` receive, on one stream that ends when `stream` does."""
    merged_in, merged = anyio.create_memory_object_stream[Any](0)

    async def forward(source: Any, sink: Any, then: Callable[[], None]) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async with sink:
                async for item in source:
                    await sink.send(item)
        then()

    async with anyio.create_task_group() as group:
        group.start_soon(forward, stream, merged_in.clone(), extra_in.close)
        group.start_soon(forward, extra, merged_in.clone(), lambda: None)
        merged_in.close()
        try:
            yield merged
        finally:
            group.cancel_scope.cancel()


def _headers(headers: dict[str, Any] | None) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in headers.items()} if headers else None


class _EofWatchedStream:
    """The transport's read stream, telling us when it ends: the SDK never reports that a
    connection closed, but a crashed stdio child or a dropped SSE stream ends here."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end
        self.ended = False

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context from here
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._end()
            raise

    def __aiter__(self) -> _EofWatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._end()
        await self._stream.aclose()

    async def __aenter__(self) -> _EofWatchedStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    def _end(self) -> None:
        if not self.ended:
            self.ended = True
            self._on_end()


# -- the client's side: elicitation, sampling, roots --------------------------------------


def _client_callbacks(client: ClientHandlers | None, server: str) -> dict[str, Any]:
    """`ClientSession` keywords for the handlers `client` has (the SDK announces a
    capability exactly when its callback is given)."""
    if client is None:
        return {}
    callbacks: dict[str, Any] = {}
    if client.elicit is not None:
        elicit = client.elicit

        async def elicitation_callback(context: Any, params: Any) -> Any:
            async def answer() -> Any:
                given = await elicit(_elicitation(params, server))
                return mcp_types.ElicitResult(action=given.action, content=given.content)

            return await _refusable(answer)

        callbacks["elicitation_callback"] = elicitation_callback
    if client.sample is not None:
        sample = client.sample

        async def sampling_callback(context: Any, params: Any) -> Any:
            async def answer() -> Any:
                given = await sample(_sampling_request(params, server))
                content = {"type": "text", "text": given.text} if given.text is not None else given.content
                return mcp_types.CreateMessageResult.model_validate(
                    {"role": "assistant", "content": content, "model": given.model, "stopReason": given.stop_reason}
                )

            return await _refusable(answer)

        callbacks["sampling_callback"] = sampling_callback
    if client.list_roots is not None:
        list_roots = client.list_roots

        async def list_roots_callback(context: Any) -> Any:
            async def answer() -> Any:
                roots = await list_roots()
                return mcp_types.ListRootsResult(
                    roots=[mcp_types.Root.model_validate({"uri": root.uri, "name": root.name}) for root in roots]
                )

            return await _refusable(answer)

        callbacks["list_roots_callback"] = list_roots_callback
    return callbacks


async def _refusable(answer: Callable[[], Awaitable[Any]]) -> Any:
    """`answer()`, or the JSON-RPC error the server gets when the host refused or
    answered something that is not a valid answer."""
    try:
        return await answer()
    except ClientRequestRefused as exc:
        return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=str(exc))
    except pydantic.ValidationError as exc:
        log.warning("the client's answer to an MCP server's request is not valid MCP (%d error(s))", exc.error_count())
        return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message="the client's answer is not valid")


def _elicitation(params: Any, server: str) -> Elicitation:
    if getattr(params, "mode", "form") == "url":
        return UrlElicitation(server, params.message, params.url, params.elicitation_id)
    return FormElicitation(server, params.message, dict(params.requested_schema))


def _sampling_request(params: Any, server: str) -> SamplingRequest:
    dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    return SamplingRequest(
        server=server,
        messages=tuple(dumped["messages"]),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_preferences=dumped.get("modelPreferences"),
        metadata=params.metadata,
    )


# -- conversions -----------------------------------------------------------------------


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """SDK and transport exceptions as `McpFailure`s (timeouts and cancellation pass through)."""
    try:
        yield
    except MCPError as exc:
        if exc.code == mcp_types.CONNECTION_CLOSED:
            raise McpConnectionLost(f"connection closed during {what}", exc.code) from None
        raise McpRequestFailed(
            f"{what} failed: {exc.message}", exc.code, data=exc.data, server_message=exc.message
        ) from None
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        raise McpConnectionLost(f"connection closed during {what}") from None
    except httpx2.TransportError as exc:
        raise McpConnectionLost(f"{what}: {type(exc).__name__}: {exc}") from None
    except pydantic.ValidationError as exc:
        raise McpRequestFailed(f"invalid answer to {what}: {exc.error_count()} validation error(s)") from None
    except RuntimeError as exc:  # SDK checks: outputSchema mismatch, input-required results...
        raise McpRequestFailed(f"{what}: {exc}") from None


@overload
def _convert(cls: type[T], sdk_model: Any, what: str) -> T: ...


@overload
def _convert(cls: object, sdk_model: Any, what: str) -> Any: ...  # a union such as ResourceContents


def _convert(cls: Any, sdk_model: Any, what: str) -> Any:
    data = sdk_model.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        return from_wire(cls, data)
    except BadRequestError as exc:
        raise McpRequestFailed(f"answer to {what} cannot be represented: {exc.message}") from None


def _server_tool(tool: Any) -> ServerTool:
    dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return ServerTool(
        name=tool.name,
        description=tool.description,
        title=tool.title,
        input_schema=dumped.get("inputSchema") or {"type": "object"},
        output_schema=dumped.get("outputSchema"),
        annotations=dumped.get("annotations"),
        meta=dumped.get("_meta"),
    )


def _capabilities(caps: Any) -> ServerCapabilities:
    tools, resources = caps.tools, caps.resources
    return ServerCapabilities(
        tools=tools is not None,
        tools_list_changed=bool(tools is not None and tools.list_changed),
        resources=resources is not None,
        resources_subscribe=bool(resources is not None and resources.subscribe),
        resources_list_changed=bool(resources is not None and resources.list_changed),
        completions=caps.completions is not None,
        prompts=caps.prompts is not None,
    )


def _classify(message: Any) -> tuple[NotificationKind | None, str | None]:
    if isinstance(message, Exception):
        log.debug("MCP transport reported %s", describe_failure(message))
        return "transport_fault", None
    if isinstance(message, mcp_types.ToolListChangedNotification):
        return "tools_changed", None
    if isinstance(message, mcp_types.ResourceListChangedNotification):
        return "resources_list_changed", None
    if isinstance(message, mcp_types.ResourceUpdatedNotification):
        return "resource_updated", str(message.params.uri)
    return None, None
