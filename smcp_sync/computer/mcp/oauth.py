"""OAuth 2.1 for sse / streamable MCP servers, run by the `mcp` SDK's own client
(docs/computer/oauth.md).

Two uses of `mcp.client.auth.OAuthClientProvider`, both over the server's credentials in
an `OAuthTokenStore` (`StoredCredentials`):

* `session_auth`, under every connection: adds the token, refreshes it once expired
  before a request would carry it (the SDK's refresh), but never starts an interactive
  authorization: a 401 (or a 403 asking for more scope) goes back to the session as it
  is, so the call fails at once with 4006 / 4007 (`upstream_auth`) instead of waiting
  for a person nobody asked. A client credentials grant needs no person: it runs there,
  also for the wider scope a 403 ``insufficient_scope`` names (streamable HTTP only: the
  SSE client's refused POST reaches the session at once, `upstream_auth`);
* `authorize`, when the host asks (`Computer.authorize`): the SDK's whole flow
  (discovery, dynamic client registration, PKCE, code exchange) with the authorization
  URL handed to the host's `open_url`, and the code coming back to a loopback listener
  (127.0.0.1, an ephemeral port, RFC 8252) or in the URL `open_url` returns.

Each mode of the config (`config.oauth_mode`) is one of the SDK's providers
(`OAuthClientProvider`, `ClientCredentialsOAuthProvider`, `PrivateKeyJWTOAuthProvider`,
and for cross-app access `IdentityAssertionOAuthProvider`) with what the config adds
(`_Configured`, `_IdentityAssertion`). Tokens, codes, client secrets and keys stay
between the SDK, the inputs and the store (which never holds a configured secret):
messages and logs here name servers, statuses and exception types only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import sys
import time
import warnings
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Union
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import attrs
import httpx2
from anyio.abc import SocketAttribute
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
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
    ProtectedResourceMetadata,
)
from mcp.client.auth.utils import extract_scope_from_www_auth, union_scopes
from mcp.shared.auth_utils import check_resource_allowed
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyUrl, ValidationError

from ...protocol.errors import BadRequestError, ErrorCode, ToolAuthorizationError, cut_short
from ...protocol.models import (
    MCPServerConfig,
    OAuthOptions,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
)
from ..config.oauth_mode import ClientCredentials, IdentityAssertion, check_private_key, oauth_mode, secret_inputs
from ..config.oauth_store import OAuthTokenStore

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

log = logging.getLogger(__name__)

#: ``open_url(authorization_url)``: shows the URL to the user (a browser); returns None
#: when the redirect goes to the loopback listener, else the URL the user was redirected to.
OpenUrl = Callable[[str], "str | None"]
HttpServerConfig = Union[SseServerConfig, StreamableHttpServerConfig]
#: The redirect URI given to a connection's provider, which never sends anyone to it.
_UNUSED_REDIRECT = "http://127.0.0.1/callback"
_CALLBACK_PATH = "/callback"
_MAX_REQUEST_HEAD = 16384
_URL_QUERY = re.compile(r"(https?://[^\s?#'\"]+)[?#][^\s'\"]*")
#: The SDK's message for a redirect whose state is not the one sent (it shows both).
_STATE_MISMATCH = "State parameter mismatch"


class OAuthAuthorizationError(ToolAuthorizationError):
    """`Computer.authorize` did not obtain a token (refused, or the flow failed): 4007."""

    default_code = ErrorCode.TOOL_AUTHORIZATION_FAILED


class StoredCredentials:
    """The SDK's `TokenStorage` for one server over an `OAuthTokenStore` (blocking calls
    run in a worker thread). Also keeps when the token expires, which the SDK does not
    store: a token loaded at the next start is then refreshed in time, not used stale.
    `redirect_uri`: a stored client registered for another redirect is not offered."""

    def __init__(
        self, store: OAuthTokenStore, server_key: str, redirect_uri: str | None = None, *, fresh: bool = False
    ) -> None:
        self._store = store
        #: Offers no stored token (`authorize` with scopes: the user is asked again).
        self._fresh = fresh
        self._key = server_key
        #: The server's name, for logs (its key's URL may carry a key).
        self.server = server_key.split(" ", 1)[0]
        self._redirect_uri = redirect_uri
        #: Unix time the loaded token expires (None: unknown or none loaded).
        self.expires_at: float | None = None

    async def get_tokens(self) -> OAuthToken | None:
        if self._fresh:
            return None
        record = await self._load("tokens")
        try:
            token = OAuthToken.model_validate(record["token"]) if record else None
        except (KeyError, TypeError, ValidationError):
            log.warning("stored OAuth tokens of MCP server %r unreadable: ignored", self.server)
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
            log.warning("stored OAuth client of MCP server %r unreadable: ignored", self.server)
            return None
        if client is not None and self._redirect_uri is not None:
            if not any(_same_redirect(self._redirect_uri, str(uri)) for uri in client.redirect_uris or ()):
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
                self.server,
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
                self.server,
                type(exc).__name__,
            )


def _same_redirect(wanted: str, registered: str) -> bool:
    """The same redirect URI, a loopback one on any port (RFC 8252 section 7.3: the
    listener's port changes at each authorization; the client, and the sessions bound
    to it, stay the same)."""
    if wanted == registered:
        return True
    a, b = urlsplit(wanted), urlsplit(registered)
    loopback = a.scheme == b.scheme == "http" and a.hostname == b.hostname == "127.0.0.1"
    return loopback and (a.path, a.query) == (b.path, b.query)


def forget_tokens(config: HttpServerConfig, store: OAuthTokenStore) -> None:
    """Drop the token `StoredCredentials` keeps for `config`'s server (its client
    registration stays). Blocking: never on the loop."""
    store.delete(f"{server_key(config)}/tokens")


class ClientSecrets:
    """The values of a server's secret inputs (`oauth_mode.secret_inputs`) by input id,
    resolved off the loop when the server is configured (`resolve_secrets`); shown by id."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def __getitem__(self, input_id: str) -> str:
        return self._values[input_id]

    def hidden_in(self, text: str) -> str:
        """`text` with every one of these values replaced by ``[secret]``."""
        for value in self._values.values():
            text = text.replace(value, "[secret]")
        return text

    def __repr__(self) -> str:
        return f"ClientSecrets({sorted(self._values)})"


def resolve_secrets(config: MCPServerConfig, value: Callable[[str], Any]) -> ClientSecrets:
    """`config`'s secret inputs through `value` (the inputs' resolver; it may ask, so not
    on the loop). An input without a value raises its `InputError`."""
    options = getattr(config, "oauth", None)
    if options is None:
        return ClientSecrets({})
    server = config.bundle_id or config.name
    mode = oauth_mode(options.mode, server)
    if isinstance(mode, ClientCredentials) and mode.issuer is None:
        log.warning(
            "MCP server %r: no oauth.mode.issuer: its client credentials go to the authorization server "
            "the MCP server names",
            server,
        )
    values = {input_id: value(input_id) for input_id in secret_inputs(mode)}
    for input_id, secret in values.items():
        if not isinstance(secret, str) or not secret:
            raise BadRequestError(
                f"input {input_id!r} (a secret of MCP server {server!r}'s oauth block) must be a non-empty string",
                details={"input": input_id, "mcp_server": server},
            )
    if isinstance(mode, ClientCredentials) and mode.private_key_input is not None:
        check_private_key(values[mode.private_key_input], mode, server)
    return ClientSecrets(values)


@dataclasses.dataclass
class _ResourceContext(OAuthContext):
    """The SDK's context with the ``resource`` the config names: sent in every
    authorization, token and refresh request (RFC 8707) instead of the one the SDK derives."""

    configured_resource: str = ""

    def get_resource_url(self) -> str:
        return self.configured_resource

    def should_include_resource_param(self, protocol_version: str | None = None) -> bool:
        return True


class _Configured(OAuthClientProvider):
    """What the config adds to each of the SDK's providers: a pre-registered client held
    in memory (its secret never stored), the client authentication the authorization
    server offers for a configured secret (RFC 8414: ``client_secret_basic`` unless it
    offers only ``client_secret_post``), the ``resource``, and what `StoredCredentials`
    keeps that the SDK does not (the token's expiry, the authorization server's metadata).

    Under a connection (`session`) a refusal always reaches the session as the MCP
    server's own 401 / 403 (4006 / 4007): an authorization code flow is not started (it
    needs a person), and a grant the authorization server refuses (a wrong client secret, a
    wider scope) is logged by exception type, never raised with the authorization server's
    answer; the request goes again as it was refused (without its token after a 401)."""

    _stored: StoredCredentials
    _secrets: ClientSecrets
    _fixed_client: OAuthClientInformationFull | None = None
    _configured_secret = False
    _resource: str | None = None
    _session = False
    _step_up: StepUp | None = None
    _step_up_lock: anyio.Lock | None = None
    _wanted_scope: str | None = None

    def configure(
        self,
        storage: StoredCredentials,
        fixed_client: OAuthClientInformationFull | None,
        configured_secret: bool,
        resource: str | None,
        session: bool,
        secrets: ClientSecrets,
        *,
        step_up: StepUp | None = None,
        wanted_scope: str | None = None,
    ) -> None:
        self._stored = storage
        self._secrets = secrets
        self._step_up = step_up
        self._wanted_scope = wanted_scope
        self._fixed_client = fixed_client
        self._configured_secret = configured_secret
        self._resource = resource
        self._session = session
        if resource is not None:
            fields = {item.name: getattr(self.context, item.name) for item in dataclasses.fields(self.context)}
            self.context = _ResourceContext(**fields, configured_resource=resource)

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        if not self._session:
            return flow
        person_needed = not isinstance(self, (ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider))
        step_up = self._stepped_up if self._step_up is not None else None
        return _within_session(flow, request, self._stored.server, self._secrets, person_needed, step_up)

    async def _stepped_up(self, refusal: httpx2.Response, request: httpx2.Request) -> bool:
        """Authorize again for the scope held and the one `refusal` names (their union,
        as the SDK's own step-up asks), the user sent where `authorize` sends them
        (`step_up`); then carry the new token. False when it was not granted. One at a
        time: a call refused meanwhile uses the token the first one obtained."""
        assert self._step_up is not None
        challenged = extract_scope_from_www_auth(refusal)
        if self._step_up_lock is None:
            self._step_up_lock = anyio.Lock()
        async with self._step_up_lock:
            tokens = await self._stored.get_tokens()
            granted = tokens.scope if tokens is not None else None
            if not _covers(granted, challenged):
                wanted = union_scopes(union_scopes(self.context.client_metadata.scope, granted), challenged)
                log.info("MCP server %r asks for scope %r: authorizing it again", self._stored.server, challenged)
                try:
                    await self._step_up(wanted or "")
                except (OAuthAuthorizationError, TimeoutError) as exc:
                    log.warning("MCP server %r: the wider scope it asks for was not granted (%s)", self._stored.server, exc)
                    return False
                tokens = await self._stored.get_tokens()
            if tokens is None:
                return False
            self.context.current_tokens = tokens
            self.context.token_expiry_time = self._stored.expires_at
            if self._fixed_client is None:
                self.context.client_info = await self._stored.get_client_info() or self.context.client_info
        self._add_auth_header(request)
        return True

    async def _initialize(self) -> None:
        await super()._initialize()
        if self._fixed_client is not None:
            self.context.client_info = self._fixed_client
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._stored.expires_at
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = await self._stored.get_server_metadata()

    async def _validate_resource_match(self, prm: ProtectedResourceMetadata) -> None:
        if self._resource is None:
            await super()._validate_resource_match(prm)
        elif prm.resource is not None and not check_resource_allowed(self._resource, str(prm.resource)):
            raise OAuthFlowError("the protected resource metadata names another resource than oauth.resource")

    async def _perform_authorization(self) -> httpx2.Request:
        if self._wanted_scope is not None:  # asked for beyond what the server's challenge names
            self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self._wanted_scope)
        self._authenticate_as_offered()
        return await super()._perform_authorization()

    async def _refresh_token(self) -> httpx2.Request:
        self._authenticate_as_offered()
        return await super()._refresh_token()

    def _authenticate_as_offered(self) -> None:
        client = self.context.client_info
        if not self._configured_secret or client is None:
            return
        metadata = self.context.oauth_metadata
        offered = (metadata.token_endpoint_auth_methods_supported if metadata else None) or ["client_secret_basic"]
        method = "client_secret_post" if "client_secret_basic" not in offered and "client_secret_post" in offered else "client_secret_basic"
        self.context.client_info = client.model_copy(update={"token_endpoint_auth_method": method})


class _AuthorizationCode(_Configured, OAuthClientProvider):
    """The SDK's authorization code flow (run only when the host asks: `authorize`)."""


class _SecretCredentials(_Configured, ClientCredentialsOAuthProvider):
    """The SDK's client credentials grant, the client authenticated by its secret."""


class _PrivateKeyCredentials(_Configured, PrivateKeyJWTOAuthProvider):
    """The SDK's client credentials grant, the client authenticated by a JWT it signs."""


def failure_reason(exc: BaseException, secrets: ClientSecrets) -> str:
    """Why an OAuth step failed, as the `mcp` SDK (or httpx) said it, fit for an error or a
    log line: its type and message, without URL queries (a key may ride in one), the
    OAuth ``state``, or any of `secrets`; at most 300 characters."""
    text = str(exc)
    if text.startswith(_STATE_MISMATCH):
        text = _STATE_MISMATCH
    text = " ".join(secrets.hidden_in(_URL_QUERY.sub(r"\1?...", text)).split())
    return f"{type(exc).__name__}: {cut_short(text, 300)}" if text else type(exc).__name__


#: ``step_up(refusal, request)``: authorize the wider scope `refusal` names and put the new
#: token on `request`; False when it was not granted.
_SessionStepUp = Callable[[httpx2.Response, httpx2.Request], Awaitable[bool]]


async def _within_session(
    flow: AsyncGenerator[httpx2.Request, httpx2.Response],
    request: httpx2.Request,
    server: str,
    secrets: ClientSecrets,
    person_needed: bool,
    step_up: _SessionStepUp | None,
) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
    """A provider's `flow` under a connection (`_Configured`): a refusal that needs a
    person reaches the session (after a step-up, if `step_up` is given), and so does a
    grant the authorization server refuses (logged with its reason, never raised)."""
    status = None  # of the server's last answer to `request`
    try:
        outgoing = await flow.__anext__()
        while True:
            response = yield outgoing
            if outgoing is request:
                status = response.status_code
                if person_needed and _needs_a_person(response):
                    if status == 403 and step_up is not None:
                        await flow.aclose()  # the SDK's flow holds its lock: other requests go on meanwhile
                        if await step_up(response, request):
                            yield request  # with the wider token; its answer, whatever it is, is the call's
                    return  # the refusal reaches the session: 4006 / 4007
            try:
                outgoing = await flow.asend(response)
            except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as exc:
                log.warning("MCP server %r: its OAuth grant was refused (%s)", server, failure_reason(exc, secrets))
                if status != 403:  # a wider scope refused: the token still holds (403 again, 4007)
                    request.headers.pop("Authorization", None)
                yield request  # the server's own refusal reaches the session: 4006 / 4007
                return
    except StopAsyncIteration:
        return
    finally:
        await flow.aclose()


def _covers(granted: str | None, wanted: str | None) -> bool:
    """Whether the scope `granted` includes every scope of `wanted`."""
    return bool(wanted) and set((wanted or "").split()) <= set((granted or "").split())


def _needs_a_person(response: httpx2.Response) -> bool:
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 401 or (response.status_code == 403 and "insufficient_scope" in challenge)


def server_key(config: HttpServerConfig) -> str:
    """Whose credentials: the server, its URL and the resource asked for (another URL or
    resource is another server's)."""
    key = f"{config.bundle_id or config.name} {config.server_parameters.url}"
    resource = config.oauth.resource if config.oauth is not None else None
    return f"{key} {resource}" if resource else key


def session_auth(
    config: MCPServerConfig,
    store: OAuthTokenStore,
    secrets: ClientSecrets,
    step_up: StepUp | None = None,
    identity_assertion: AssertionCallback | None = None,
) -> httpx2.Auth | None:
    """The auth of a connection to `config`'s server (None: it has no `oauth` block). A
    client credentials grant needs nobody, so it runs here whenever the server asks; an
    authorization code grant asked for a wider scope during a request runs `step_up`, if
    given (the host can reach the user: `ClientFeatures.open_url`)."""
    if isinstance(config, StdioServerConfig) or config.oauth is None:
        return None
    storage = StoredCredentials(store, server_key(config))
    return _provider(config, storage, secrets, _UNUSED_REDIRECT, None, step_up, identity_assertion=identity_assertion)


@attrs.frozen
class IdentityAssertionRequest:
    """What the host's `ClientFeatures.identity_assertion` is asked for: an identity
    assertion (ID-JAG) from the enterprise's identity provider for MCP server `server`,
    whose ``aud`` is `audience` (the authorization server) and ``resource`` `resource`."""

    server: str
    audience: str
    resource: str


#: ``identity_assertion(request) -> str``: the ID-JAG (blocking; called off the loop).
AssertionCallback = Callable[[IdentityAssertionRequest], str]
#: ``step_up(scope)``: authorize the server again for `scope` (space-separated), the user
#: sent where `authorize` sends them; raises `OAuthAuthorizationError` or TimeoutError when
#: it is not granted (`authorize` with its arguments bound but the scopes).
StepUp = Callable[[str], Awaitable[None]]
#: The authorization code flow's two hooks: (redirect_handler, callback_handler).
CodeHandlers = tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]


def _provider(
    config: HttpServerConfig,
    storage: StoredCredentials,
    secrets: ClientSecrets,
    redirect_uri: str,
    handlers: CodeHandlers | None,
    step_up: StepUp | None = None,
    wanted_scope: str | None = None,
    identity_assertion: AssertionCallback | None = None,
) -> _Configured | _IdentityAssertion:
    """The SDK's provider for `config`'s mode: with `handlers`, one that runs the whole
    authorization code flow; without, a connection's (`_Configured`, `session`)."""
    assert config.oauth is not None
    options = config.oauth
    mode = oauth_mode(options.mode, config.bundle_id or config.name)
    url = config.server_parameters.url
    scope = " ".join(options.scopes) or None
    provider: _Configured
    if isinstance(mode, IdentityAssertion):
        assertion = _identity_assertion(mode, config.bundle_id or config.name, secrets, identity_assertion)
        return _IdentityAssertion(
            url, storage, mode.client_id, secrets[mode.secret_input], mode.issuer, assertion, scope=scope,
            token_endpoint_auth_method=mode.auth_method,
        ).configure(storage.server, secrets, options.resource, handlers is None)
    if isinstance(mode, ClientCredentials):
        with warnings.catch_warnings():  # without an issuer the SDK warns; resolve_secrets logged it
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            if mode.secret_input is not None:
                provider = _SecretCredentials(
                    url, storage, mode.client_id, secrets[mode.secret_input], scope=scope, issuer=mode.issuer
                )
            else:
                assert mode.private_key_input is not None
                provider = _PrivateKeyCredentials(
                    url, storage, mode.client_id, _signed_assertions(mode, secrets[mode.private_key_input]),
                    scope=scope, issuer=mode.issuer,
                )
        provider.configure(storage, None, mode.secret_input is not None, options.resource, handlers is None, secrets)
        return provider
    fixed = None
    if mode.client_id is not None:
        fixed = OAuthClientInformationFull(
            client_id=mode.client_id,
            client_secret=secrets[mode.secret_input] if mode.secret_input else None,
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method="client_secret_basic" if mode.secret_input else "none",
        )
    metadata = _client_metadata(options, redirect_uri)
    redirect_handler, callback_handler = handlers if handlers is not None else (None, None)
    provider = _AuthorizationCode(
        url, metadata, storage, redirect_handler, callback_handler, client_metadata_url=mode.metadata_url
    )
    provider.configure(
        storage, fixed, mode.secret_input is not None, options.resource, handlers is None, secrets,
        step_up=step_up, wanted_scope=wanted_scope,
    )  # fmt: skip
    return provider


class _IdentityAssertion(IdentityAssertionOAuthProvider):
    """The SDK's cross-app access provider (an identity assertion grant) with what the config adds: the
    ``resource`` (RFC 8707) instead of the one the SDK derives, and under a connection
    the same handling of refused grants as `_Configured` (it needs nobody)."""

    def configure(
        self, server: str, secrets: ClientSecrets, resource: str | None, session: bool
    ) -> _IdentityAssertion:
        self._server, self._secrets, self._session = server, secrets, session
        if resource is not None:
            self._resource = resource  # what the SDK sends as `resource` in the token request
        return self

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        return _within_session(flow, request, self._server, self._secrets, False, None) if self._session else flow


def _identity_assertion(
    mode: IdentityAssertion, server: str, secrets: ClientSecrets, host: AssertionCallback | None
) -> Callable[[str, str], Awaitable[str]]:
    """The SDK's ``assertion_provider``: the value of ``assertionInput``, else the host's
    callback, asked off the loop at each exchange (an ID-JAG lives minutes)."""

    async def assertion(audience: str, resource: str) -> str:
        if mode.assertion_input is not None:
            return secrets[mode.assertion_input]
        assert host is not None, "the manager refuses this mode without an assertion"
        request = IdentityAssertionRequest(server, audience, resource)
        given = await anyio.to_thread.run_sync(host, request, abandon_on_cancel=True)
        if not isinstance(given, str) or not given:
            raise OAuthFlowError("the host's identity_assertion callback returned no assertion")
        return given

    return assertion


def _signed_assertions(mode: ClientCredentials, private_key: str) -> Callable[[str], Awaitable[str]]:
    """RFC 7523 client assertions signed with `private_key` (PEM), for the authorization
    server's issuer or the configured ``tokenEndpointAudience``."""
    signed = SignedJWTParameters(
        issuer=mode.client_id, subject=mode.client_id, signing_key=private_key, signing_algorithm=mode.algorithm
    ).create_assertion_provider()

    async def assertion(audience: str) -> str:
        return await signed(mode.audience or audience)

    return assertion


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
    secrets: ClientSecrets,
    open_url: OpenUrl,
    redirect_uri: str | None,
    timeout: float,
    request_timeout: float,
    scopes: str | None = None,
    *,
    identity_assertion: AssertionCallback | None = None,
) -> None:
    """Run the SDK's authorization flow for `config`'s server, storing its tokens (module
    doc), within `timeout` seconds (the listener is closed when this returns or raises);
    `request_timeout` bounds each HTTP request. A client credentials grant asks nobody.
    With `scopes` (space-separated), the user is asked again whatever token is stored,
    for those scopes as well as the ones the server names."""
    server = config.bundle_id or config.name
    if isinstance(config, StdioServerConfig) or config.oauth is None:
        raise BadRequestError(
            f"MCP server {server!r} has no oauth block in its configuration", details={"mcp_server": server}
        )
    try:
        with anyio.fail_after(timeout):
            status = await _authorize(
                config, server, store, secrets, open_url, redirect_uri, request_timeout, scopes, identity_assertion
            )
    except TimeoutError:
        raise TimeoutError(f"MCP server {server!r} was not authorized within {timeout:g}s") from None
    if status in (401, 403):
        raise OAuthAuthorizationError(
            f"MCP server {server!r} still refuses the authorization (HTTP {status})",
            details={"mcp_server": server},
        )
    log.info("MCP server %r: authorized", server)


async def _authorize(
    config: HttpServerConfig,
    server: str,
    store: OAuthTokenStore,
    secrets: ClientSecrets,
    open_url: OpenUrl,
    redirect_uri: str | None,
    request_timeout: float,
    scopes: str | None,
    identity_assertion: AssertionCallback | None,
) -> int:
    """The MCP endpoint's status once the flow has run (a client credentials grant
    redirects nobody: no listener)."""
    assert config.oauth is not None
    if isinstance(oauth_mode(config.oauth.mode, server), (ClientCredentials, IdentityAssertion)):
        redirect_uri = _UNUSED_REDIRECT  # nobody is redirected
    async with _code_receiver(redirect_uri) as (redirect, wait_for_redirect):
        storage = StoredCredentials(store, server_key(config), redirect_uri=redirect, fresh=scopes is not None)
        handed_back: list[str] = []

        async def redirect_handler(authorization_url: str) -> None:
            log.info("MCP server %r: authorization URL handed to the host", server)
            returned = await anyio.to_thread.run_sync(open_url, authorization_url, abandon_on_cancel=True)
            if returned:
                handed_back.append(str(returned))

        async def callback_handler() -> AuthorizationCodeResult:
            return _code_result(handed_back[0] if handed_back else await wait_for_redirect(), server)

        handlers = (redirect_handler, callback_handler)
        provider = _provider(
            config, storage, secrets, redirect, handlers, wanted_scope=scopes, identity_assertion=identity_assertion
        )
        try:
            status = await _touch(config, provider, request_timeout)
            if isinstance(provider, _Configured) and provider.context.oauth_metadata is not None:
                await storage.set_server_metadata(provider.context.oauth_metadata)
        except (
            OAuthFlowError,
            OAuthTokenError,
            OAuthRegistrationError,
            httpx2.HTTPError,
        ) as exc:
            reason = failure_reason(exc, secrets)
            cause = exc if reason == f"{type(exc).__name__}: {exc}" else OAuthFlowError(reason)
            raise OAuthAuthorizationError(
                f"authorization of MCP server {server!r} failed ({reason})", details={"mcp_server": server}
            ) from cause
    return status


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

    try:
        async with (
            listener,
            anyio.create_task_group() as group,
        ):  # the listener closes after its server
            group.start_soon(listener.serve, handle)
            try:
                yield f"http://127.0.0.1:{port}{_CALLBACK_PATH}", wait_for_redirect
            finally:
                group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:  # the task group wraps what the flow raised
        if len(errors.exceptions) != 1:
            raise
        flow_error = errors.exceptions[0]
        raise flow_error from flow_error.__cause__  # its own cause kept (the SDK's reason), not the group


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
