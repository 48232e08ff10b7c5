"""OAuth 2.1 for sse / streamable MCP servers, run by the `mcp` SDK's own client (README,
"OAuth for remote MCP servers").

Two uses of `mcp.client.auth.OAuthClientProvider`, both over the server's credentials in
an `OAuthTokenStore` (`StoredCredentials`):

* `session_auth`, under every connection: adds the token, refreshes it once expired
  before a request would carry it (the SDK's refresh), but never starts an interactive
  authorization: a 401 (or a 403 asking for more scope) goes back to the session as it
  is, so the call fails at once with 4006 / 4007 (`upstream_auth`) instead of waiting
  for a person nobody asked;
* `authorize`, when the host asks (`Computer.authorize`): the SDK's whole flow
  (discovery, dynamic client registration, PKCE, code exchange) with the authorization
  URL handed to the host's `open_url`, and the code coming back to a loopback listener
  (127.0.0.1, an ephemeral port, RFC 8252) or in the URL `open_url` returns.

Tokens, codes and client secrets stay between the SDK and the store: messages and logs
here name servers, statuses and exception types only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Union
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import httpx2
from anyio.abc import SocketAttribute
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import (
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from ...protocol.errors import BadRequestError, ErrorCode, ToolAuthorizationError
from ...protocol.models import (
    MCPServerConfig,
    OAuthOptions,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
)
from ..config.oauth_store import OAuthTokenStore

log = logging.getLogger(__name__)

#: ``open_url(authorization_url)``: shows the URL to the user (a browser); returns None
#: when the redirect goes to the loopback listener, else the URL the user was redirected to.
OpenUrl = Callable[[str], "str | None"]
HttpServerConfig = Union[SseServerConfig, StreamableHttpServerConfig]
#: The redirect URI given to a connection's provider, which never sends anyone to it.
_UNUSED_REDIRECT = "http://127.0.0.1/callback"
_CALLBACK_PATH = "/callback"
_MAX_REQUEST_HEAD = 16384


class OAuthAuthorizationError(ToolAuthorizationError):
    """`Computer.authorize` did not obtain a token (refused, or the flow failed): 4007."""

    default_code = ErrorCode.TOOL_AUTHORIZATION_FAILED


class StoredCredentials:
    """The SDK's `TokenStorage` for one server over an `OAuthTokenStore` (blocking calls
    run in a worker thread). Also keeps when the token expires, which the SDK does not
    store: a token loaded at the next start is then refreshed in time, not used stale.
    `redirect_uri`: a stored client registered for another redirect is not offered."""

    def __init__(self, store: OAuthTokenStore, server_key: str, redirect_uri: str | None = None) -> None:
        self._store = store
        self._key = server_key
        self._server = server_key.split(" ", 1)[0]  # for logs: a URL may carry a key
        self._redirect_uri = redirect_uri
        #: Unix time the loaded token expires (None: unknown or none loaded).
        self.expires_at: float | None = None

    async def get_tokens(self) -> OAuthToken | None:
        record = await self._load("tokens")
        try:
            token = OAuthToken.model_validate(record["token"]) if record else None
        except (KeyError, TypeError, ValidationError):
            log.warning("stored OAuth tokens of MCP server %r unreadable: ignored", self._server)
            return None
        expires_at = record.get("expires_at") if record else None
        self.expires_at = float(expires_at) if isinstance(expires_at, (int, float)) else None
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        await self._save(
            "tokens",
            {
                "token": tokens.model_dump(mode="json", exclude_none=True),
                "expires_at": expires_at,
            },
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        record = await self._load("client")
        try:
            client = OAuthClientInformationFull.model_validate(record) if record else None
        except ValidationError:
            log.warning("stored OAuth client of MCP server %r unreadable: ignored", self._server)
            return None
        if client is not None and self._redirect_uri is not None:
            if self._redirect_uri not in [str(uri) for uri in client.redirect_uris or ()]:
                return None  # registered for another redirect: register again
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._save("client", client_info.model_dump(mode="json", exclude_none=True))

    async def get_server_metadata(self) -> OAuthMetadata | None:
        """The authorization server's metadata the last flow discovered (the SDK discovers
        it only on a 401, and without it would refresh at the MCP server's own origin)."""
        record = await self._load("server")
        try:
            return OAuthMetadata.model_validate(record) if record else None
        except ValidationError:
            return None

    async def set_server_metadata(self, metadata: OAuthMetadata) -> None:
        await self._save("server", metadata.model_dump(mode="json", exclude_none=True))

    async def _load(self, record: str) -> Any:
        try:
            text = await anyio.to_thread.run_sync(self._store.load, f"{self._key}/{record}")
            return json.loads(text) if text else None
        except Exception as exc:  # a locked keyring, a damaged file: as if nothing were stored
            log.warning(
                "OAuth %s of MCP server %r could not be read (%s)",
                record,
                self._server,
                type(exc).__name__,
            )
            return None

    async def _save(self, record: str, value: Any) -> None:
        try:
            await anyio.to_thread.run_sync(self._store.save, f"{self._key}/{record}", json.dumps(value))
        except Exception as exc:  # the token still serves this run
            log.warning(
                "OAuth %s of MCP server %r could not be stored (%s)",
                record,
                self._server,
                type(exc).__name__,
            )


class _SessionAuth(OAuthClientProvider):
    """The SDK's provider without its interactive part (module doc, `session_auth`)."""

    def __init__(self, server_url: str, metadata: OAuthClientMetadata, storage: StoredCredentials) -> None:
        super().__init__(server_url, metadata, storage)
        self._stored = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._stored.expires_at
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = await self._stored.get_server_metadata()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and _needs_a_person(response):
                    return  # the refusal reaches the session: 4006 / 4007
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


def _needs_a_person(response: httpx2.Response) -> bool:
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 401 or (response.status_code == 403 and "insufficient_scope" in challenge)


def server_key(config: HttpServerConfig) -> str:
    """Whose credentials: the server and its URL (another URL is another server's)."""
    return f"{config.bundle_id or config.name} {config.server_parameters.url}"


def session_auth(config: MCPServerConfig, store: OAuthTokenStore) -> httpx2.Auth | None:
    """The auth of a connection to `config`'s server (None: it has no `oauth` block)."""
    if isinstance(config, StdioServerConfig) or config.oauth is None:
        return None
    storage = StoredCredentials(store, server_key(config))
    return _SessionAuth(
        config.server_parameters.url,
        _client_metadata(config.oauth, _UNUSED_REDIRECT),
        storage,
    )


def _client_metadata(options: OAuthOptions, redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(options.scopes) or None,
        client_name=options.client_name or "smcp_sync",
    )


async def authorize(
    config: MCPServerConfig,
    store: OAuthTokenStore,
    open_url: OpenUrl,
    redirect_uri: str | None,
    timeout: float,
    request_timeout: float,
) -> None:
    """Run the SDK's authorization flow for `config`'s server, storing its tokens (module
    doc), within `timeout` seconds (the listener is closed when this returns or raises);
    `request_timeout` bounds each HTTP request."""
    server = config.bundle_id or config.name
    if isinstance(config, StdioServerConfig) or config.oauth is None:
        raise BadRequestError(
            f"MCP server {server!r} has no oauth block in its configuration", details={"mcp_server": server}
        )
    try:
        with anyio.fail_after(timeout):
            await _authorize(config, config.oauth, server, store, open_url, redirect_uri, request_timeout)
    except TimeoutError:
        raise TimeoutError(f"MCP server {server!r} was not authorized within {timeout:g}s") from None
    log.info("MCP server %r: authorized", server)


async def _authorize(
    config: HttpServerConfig,
    options: OAuthOptions,
    server: str,
    store: OAuthTokenStore,
    open_url: OpenUrl,
    redirect_uri: str | None,
    request_timeout: float,
) -> None:
    url = config.server_parameters.url
    async with _code_receiver(redirect_uri) as (redirect, wait_for_redirect):
        storage = StoredCredentials(store, server_key(config), redirect_uri=redirect)
        preregistered = options.mode.get("clientId") if options.mode.get("registration") == "preregistered" else None
        if preregistered:
            await storage.set_client_info(
                OAuthClientInformationFull(
                    client_id=preregistered,
                    redirect_uris=[AnyUrl(redirect)],
                    token_endpoint_auth_method="none",
                )
            )
        handed_back: list[str] = []

        async def redirect_handler(authorization_url: str) -> None:
            log.info("MCP server %r: authorization URL handed to the host", server)
            returned = await anyio.to_thread.run_sync(open_url, authorization_url, abandon_on_cancel=True)
            if returned:
                handed_back.append(str(returned))

        async def callback_handler() -> AuthorizationCodeResult:
            return _code_result(handed_back[0] if handed_back else await wait_for_redirect(), server)

        provider = OAuthClientProvider(
            url,
            _client_metadata(options, redirect),
            storage,
            redirect_handler,
            callback_handler,
        )
        try:
            status = await _touch(config, provider, request_timeout)
            if provider.context.oauth_metadata is not None:
                await storage.set_server_metadata(provider.context.oauth_metadata)
        except (
            OAuthFlowError,
            OAuthTokenError,
            OAuthRegistrationError,
            httpx2.HTTPError,
        ) as exc:
            raise OAuthAuthorizationError(
                f"authorization of MCP server {server!r} failed ({type(exc).__name__})",
                details={"mcp_server": server},
            ) from None
    if status in (401, 403):
        raise OAuthAuthorizationError(
            f"MCP server {server!r} still refuses the authorization (HTTP {status})",
            details={"mcp_server": server},
        )


async def _touch(config: HttpServerConfig, provider: httpx2.Auth, request_timeout: float) -> int:
    """One request to the MCP endpoint through `provider` (which authorizes on its 401);
    the answer's status. Its body is not read: an SSE stream would never end."""
    url = config.server_parameters.url
    async with httpx2.AsyncClient(auth=provider, timeout=request_timeout) as http:
        if config.type == "sse":
            request = http.stream("GET", url, headers={"accept": "text/event-stream"})
        else:
            ping = {"jsonrpc": "2.0", "id": "smcp-authorize", "method": "ping"}
            request = http.stream(
                "POST",
                url,
                json=ping,
                headers={"accept": "application/json, text/event-stream"},
            )
        async with request as response:
            return int(response.status_code)


def _code_result(redirected_to: str, server: str) -> AuthorizationCodeResult:
    query = parse_qs(urlsplit(redirected_to).query)
    first = {key: values[0] for key, values in query.items() if values}
    if "code" not in first:
        error = first.get("error", "no code in the redirect")[:80]
        raise OAuthAuthorizationError(
            f"authorization of MCP server {server!r} was not granted: {error}",
            details={"mcp_server": server},
        )
    return AuthorizationCodeResult(code=first["code"], state=first.get("state"), iss=first.get("iss"))


@contextlib.asynccontextmanager
async def _code_receiver(
    redirect_uri: str | None,
) -> AsyncIterator[tuple[str, Callable[[], Awaitable[str]]]]:
    """(redirect URI, wait for the redirect's URL): the host's `redirect_uri` (its
    `open_url` returns the URL), else a loopback listener that serves while this is entered."""
    if redirect_uri is not None:

        async def host_hands_it_back() -> str:
            raise OAuthAuthorizationError("open_url returned no redirect URL, and a redirect_uri was given")

        yield redirect_uri, host_hands_it_back
        return
    received: list[str] = []
    arrived = anyio.Event()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            target = await _request_target(stream)
            found = target is not None and urlsplit(target).path == _CALLBACK_PATH and not arrived.is_set()
            if found:
                received.append(f"http://127.0.0.1:{port}{target}")
                arrived.set()
            body = b"Authorization received: you can close this window.\n" if found else b"Not found\n"
            head = f"HTTP/1.1 {'200 OK' if found else '404 Not Found'}\r\nContent-Type: text/plain\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(head.encode() + body)

    async def wait_for_redirect() -> str:
        await arrived.wait()
        return received[0]

    async with (
        listener,
        anyio.create_task_group() as group,
    ):  # the listener closes after its server
        group.start_soon(listener.serve, handle)
        try:
            yield f"http://127.0.0.1:{port}{_CALLBACK_PATH}", wait_for_redirect
        finally:
            group.cancel_scope.cancel()


async def _request_target(stream: anyio.abc.SocketStream) -> str | None:
    """The target of an HTTP request's first line (None: not one, or not within 10 s)."""
    head = b""
    with anyio.move_on_after(10):
        with contextlib.suppress(
            anyio.EndOfStream,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            OSError,
        ):
            while b"\r\n\r\n" not in head and len(head) < _MAX_REQUEST_HEAD:
                head += await stream.receive()
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    return parts[1] if len(parts) == 3 and parts[0] == "GET" else None
