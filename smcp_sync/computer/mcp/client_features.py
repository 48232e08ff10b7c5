"""What an MCP server may ask of its client, answered by the host (docs/computer/mcp-client.md):
elicitation (a form to fill in, or a URL to visit), sampling (a completion from the host's
model) and the roots (the folders the server may work in).

The host gives blocking callbacks in one `ClientFeatures`. Each runs on an anyio worker
thread, never on the loop (as `confirm` does: it may ask a person), bounded by the latest
deadline of the requests in flight on that MCP server (a tool call waiting for the
answer), or by `ClientFeatures.timeout` when none is. A feature without a callback is
neither announced to the MCP servers nor answered: the `mcp` SDK refuses it with its
standard error, as it always did.

Everything here is our own types: `adapter` converts the SDK's requests into them and
their answers back.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Awaitable, Callable, Iterable, Literal, Sequence, TypeVar, Union

import anyio
import anyio.to_thread
import attrs

from .oauth import AssertionCallback, OpenUrl

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds a callback may take when no request to its MCP server is in flight.
DEFAULT_ANSWER_TIMEOUT = 120.0
#: Callbacks running at once (each on a worker thread, maybe waiting for a person): their
#: own limit, so that unanswered ones never hold up another call's steps on worker threads.
ANSWERS_AT_ONCE = 64

ElicitAction = Literal["accept", "decline", "cancel"]


@attrs.frozen
class FormElicitation:
    """An MCP server asks the user to fill in a form (`requested_schema`: a flat JSON
    Schema object of strings, numbers, booleans and enums)."""

    #: The asking MCP server's bundle_id, for the host to show who asks.
    server: str
    message: str
    requested_schema: dict[str, Any]

    @property
    def defaults(self) -> dict[str, Any]:
        """The schema's default values, by field: what to offer the user first."""
        properties = self.requested_schema.get("properties")
        if not isinstance(properties, dict):
            return {}
        return {name: field["default"] for name, field in properties.items() if isinstance(field, dict) and "default" in field}


@attrs.frozen
class UrlElicitation:
    """An MCP server asks the user to visit `url` (a sign-in, a payment...): nothing the
    user does there passes through the Computer. Accepting means the user agreed to go."""

    server: str
    message: str
    url: str
    elicitation_id: str | None = None


Elicitation = Union[FormElicitation, UrlElicitation]


def _check_action(answer: ElicitationAnswer, attribute: Any, action: str) -> None:
    if action not in ("accept", "decline", "cancel"):
        raise ValueError(f"an elicitation's action is 'accept', 'decline' or 'cancel', not {action!r}")


@attrs.frozen
class ElicitationAnswer:
    """The user's answer: `accept` (a form's `content`, its values by field), `decline`
    (an explicit no) or `cancel` (dismissed without choosing)."""

    action: ElicitAction = attrs.field(validator=_check_action)
    content: dict[str, Any] | None = None

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> ElicitationAnswer:
        return cls("accept", content)

    @classmethod
    def decline(cls) -> ElicitationAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationAnswer:
        return cls("cancel")


@attrs.frozen
class SamplingRequest:
    """An MCP server asks the host's model for a message (``sampling/createMessage``);
    `messages` are MCP ``SamplingMessage`` dicts (``role``, ``content``)."""

    server: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_preferences: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The text of the messages, one per line (the rest of their content left out)."""
        lines = []
        for message in self.messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else [content]:
                if isinstance(block, dict) and block.get("type") == "text":
                    lines.append(str(block.get("text", "")))
        return "\n".join(lines)


@attrs.frozen
class SampledMessage:
    """The host model's answer: its `text`, or another MCP content block (`content`, an
    image or audio dict), and which `model` made it."""

    model: str
    text: str | None = None
    content: dict[str, Any] | None = None
    stop_reason: str | None = "endTurn"

    def __attrs_post_init__(self) -> None:
        if (self.text is None) == (self.content is None):
            raise ValueError("a SampledMessage has either text or content")


def _file_uri(root: Root, attribute: Any, uri: str) -> None:
    if not isinstance(uri, str) or not uri.startswith("file://"):
        raise ValueError(f"a root's uri is a file:// URI (MCP roots are folders or files), not {uri!r}")


@attrs.frozen
class Root:
    """A folder (or file) the MCP servers may work in."""

    uri: str = attrs.field(validator=_file_uri)
    name: str | None = None


ElicitCallback = Callable[[Elicitation], ElicitationAnswer]
SampleCallback = Callable[[SamplingRequest], SampledMessage]
RootsCallback = Callable[[], Iterable[Union[Root, str]]]
#: The roots: a fixed list (`Root`s or ``file://`` URIs) or a callable returning one.
Roots = Union[Sequence[Union[Root, str]], RootsCallback]


def _positive(features: ClientFeatures, attribute: Any, value: float) -> None:
    if not value > 0:
        raise ValueError(f"ClientFeatures.{attribute.name} must be positive, got {value!r}")


@attrs.frozen(kw_only=True)
class ClientFeatures:
    """The host's answers to what MCP servers ask of their client, given to
    `Computer(client_features=...)` as one value. `elicit(request)` answers a form or a
    URL elicitation; `sample(request)` returns the host model's message; `roots` are the
    roots (or a callable returning them; `Computer.set_roots` changes them and tells the
    servers); `open_url` reaches the user for a scope step-up. Each callback blocks as
    long as it needs, within `timeout` seconds when no request to that server is in
    flight (else within the latest one's deadline)."""

    elicit: ElicitCallback | None = None
    sample: SampleCallback | None = None
    roots: Roots | None = attrs.field(default=None, validator=lambda _, __, roots: _check_roots(roots))
    #: The user's browser when an MCP server asks for a wider OAuth scope during a call
    #: (a scope step-up), as `Computer.authorize`'s `open_url`; with `redirect_uri`, the
    #: redirect the host receives itself (None: a loopback listener). None: such a call
    #: fails with 4007, its hint saying how to authorize the scope.
    open_url: OpenUrl | None = None
    redirect_uri: str | None = None
    #: The identity assertion (ID-JAG) of a server in the ``identityAssertion`` OAuth mode
    #: without an ``assertionInput``: called with an `IdentityAssertionRequest` at each
    #: token exchange, returns the assertion from the enterprise's identity provider.
    identity_assertion: AssertionCallback | None = None
    timeout: float = attrs.field(default=DEFAULT_ANSWER_TIMEOUT, validator=_positive)


class ClientRequestRefused(Exception):
    """The host did not answer an MCP server's request: the server gets an error with
    this message (it names no value the host holds)."""


@attrs.frozen
class ClientHandlers:
    """What `adapter` answers with, on the loop (None: the feature is not announced)."""

    elicit: Callable[[Elicitation], Awaitable[ElicitationAnswer]] | None
    sample: Callable[[SamplingRequest], Awaitable[SampledMessage]] | None
    list_roots: Callable[[], Awaitable[list[Root]]] | None


class ClientAnswers:
    """The host's `ClientFeatures` run for every MCP server of one Computer, and its
    current roots (`set_roots`)."""

    def __init__(self, features: ClientFeatures | None) -> None:
        self.features = features if features is not None else ClientFeatures()
        self._roots = self.features.roots
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(ANSWERS_AT_ONCE)

    def set_roots(self, roots: Roots) -> None:
        """Answer ``roots/list`` with `roots` from now on (checked now, if a list)."""
        if self._roots is None:
            raise ValueError(
                "this Computer announced no roots to its MCP servers: give it ClientFeatures(roots=...) to change them"
            )
        _check_roots(roots)
        with self._lock:
            self._roots = roots

    def handlers(self, server: str, deadline: Callable[[], float | None]) -> ClientHandlers:
        """The handlers for MCP server `server`; `deadline()` is the latest loop time by
        which a request in flight to it must end (None: none in flight)."""
        features = self.features

        async def elicit(request: Elicitation) -> ElicitationAnswer:
            assert features.elicit is not None
            try:
                answer = await self._answer(server, "elicit", features.elicit, request, deadline)
            except _NotInTime:
                return ElicitationAnswer.cancel()  # nobody answered in time: dismissed
            if not isinstance(answer, ElicitationAnswer):
                raise _refused("elicit", f"returned {type(answer).__name__}, not an ElicitationAnswer")
            return answer

        async def sample(request: SamplingRequest) -> SampledMessage:
            assert features.sample is not None
            try:
                answer = await self._answer(server, "sample", features.sample, request, deadline)
            except _NotInTime:
                raise _refused("sample", "did not answer in time") from None
            if not isinstance(answer, SampledMessage):
                raise _refused("sample", f"returned {type(answer).__name__}, not a SampledMessage")
            return answer

        async def list_roots() -> list[Root]:
            with self._lock:
                roots = self._roots
            if not callable(roots):
                return _roots_of(roots or ())
            try:
                return await self._answer(server, "roots", lambda _: _roots_of(roots()), None, deadline)
            except _NotInTime:
                raise _refused("roots", "did not answer in time") from None

        return ClientHandlers(
            elicit if features.elicit is not None else None,
            sample if features.sample is not None else None,
            list_roots if self._roots is not None else None,
        )

    async def _answer(
        self,
        server: str,
        name: str,
        callback: Callable[[Any], T],
        request: Any,
        deadline: Callable[[], float | None],
    ) -> T:
        """`callback(request)` on a worker thread, abandoned at the bound (`_NotInTime`)."""
        latest = deadline()
        bound = latest - anyio.current_time() if latest is not None else self.features.timeout
        with anyio.move_on_after(max(0.0, bound)):
            try:
                return await anyio.to_thread.run_sync(callback, request, abandon_on_cancel=True, limiter=self._limiter)
            except Exception as exc:  # the host's bug: the server hears it failed, the log says how
                log.warning("the %s callback failed for MCP server %r (%s)", name, server, type(exc).__name__)
                raise _refused(name, "failed") from None
        log.info("the %s callback for MCP server %r did not answer within %.1fs", name, server, bound)
        raise _NotInTime


class _NotInTime(Exception):
    """A callback was abandoned at its bound."""


def _refused(name: str, why: str) -> ClientRequestRefused:
    return ClientRequestRefused(f"the client's {name} callback {why}")


def _check_roots(roots: Roots | None) -> None:
    """A list of roots is checked when given (a callable's answer, when it is called)."""
    if roots is not None and not callable(roots):
        _roots_of(roots)


def _roots_of(roots: Iterable[Root | str]) -> list[Root]:
    if isinstance(roots, (str, bytes)):
        raise TypeError("roots must be a list of Root or file:// URIs, not one string")
    return [root if isinstance(root, Root) else Root(root) for root in roots]
