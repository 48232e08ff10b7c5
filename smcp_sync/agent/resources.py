"""Reading a Computer's MCP resources: the extension events of docs/ARCHITECTURE.md, Wire decisions.

`client:read_resource`, `client:get_resources` and `client:complete` reach the MCP
servers a Computer hosts. The Finder helpers (`finder_navigation`) are built on `read_resource_contents`.

URIs are checked before anything is sent: a `dpe://` URI that breaks a rule of
spec/finder.md raises `InvalidURIError` (4204) naming the rule, a bad `window://` URI a
`BadRequestError` (400), the same errors the Computer would answer, without the round trip.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Mapping, Union

from .transport import AgentTransport
from ..protocol import dpe_uri, events, window_uri
from ..protocol.errors import BadRequestError, InternalError
from ..protocol.models import (
    BlobResourceContents,
    CompleteReq,
    CompleteRet,
    Completion,
    CompletionArgument,
    CompletionContext,
    GetResourcesReq,
    GetResourcesRet,
    PromptReference,
    ReadResourceReq,
    ReadResourceRet,
    ResourceContents,
    ResourceTemplateReference,
)
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id

CompletionTarget = Union[str, ResourceTemplateReference, PromptReference]


class ResourceMethods:
    """The Agent's resource requests (a mixin: needs the Agent's `_connection`)."""

    _connection: AgentTransport

    def read_resource(
        self,
        computer: str,
        uri: str,
        *,
        mcp_server: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> Any:
        """Read `uri` on `computer`: parsed JSON for JSON contents, the text of other text
        contents, bytes for a blob; a list of those when the resource has no content or
        several. `dpe://` and `window://` URIs go to the MCP server that lists them; other
        URIs need `mcp_server`. Finder failures raise `FinderError` (4201–4203) or
        `InvalidURIError` (4204)."""
        contents = self.read_resource_contents(computer, uri, mcp_server=mcp_server, timeout=timeout)
        values = [content_value(content) for content in contents]
        return values[0] if len(values) == 1 else values

    def read_resource_contents(
        self,
        computer: str,
        uri: str,
        *,
        mcp_server: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> list[ResourceContents]:
        """`read_resource` as the MCP server answered it: `TextResourceContents` /
        `BlobResourceContents` models with their `mime_type`."""
        check_uri(uri)
        request = ReadResourceReq(
            agent=self._connection.name, req_id=new_req_id(), computer=computer, uri=uri, mcp_server=mcp_server
        )
        return ask(self._connection, events.READ_RESOURCE, request, ReadResourceRet, timeout).contents

    def get_resources(
        self,
        computer: str,
        mcp_server: str,
        cursor: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> GetResourcesRet:
        """One page of `mcp_server`'s `resources/list` on `computer`; pass the answer's
        `next_cursor` back as `cursor` for the next page (None: that was the last)."""
        request = GetResourcesReq(
            agent=self._connection.name, req_id=new_req_id(), computer=computer, mcp_server=mcp_server, cursor=cursor
        )
        return ask(self._connection, events.GET_RESOURCES, request, GetResourcesRet, timeout)

    def complete(
        self,
        computer: str,
        ref: CompletionTarget,
        argument: str,
        value: str = "",
        *,
        context: Mapping[str, str | int] | None = None,
        mcp_server: str | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> Completion:
        """Suggestions for `argument` of a resource template (`ref` as its URI template,
        e.g. ``"dpe://com.example.docs/{doc_ref}/pages/{page_index}"``) or of a prompt
        (`PromptReference`, with `mcp_server`), given the typed `value`. `context` holds
        the arguments already chosen (MCP `completion/complete`, seed 002): for `dpe://`
        templates ``doc_ref`` → ``page_index`` → ``element_id``."""
        reference = ResourceTemplateReference(uri=ref) if isinstance(ref, str) else ref
        if not isinstance(reference, (ResourceTemplateReference, PromptReference)):
            raise BadRequestError(
                "ref must be a URI template string, ResourceTemplateReference or PromptReference, "
                f"not {type(ref).__name__}"
            )
        request = CompleteReq(
            agent=self._connection.name,
            req_id=new_req_id(),
            computer=computer,
            ref=reference,
            argument=CompletionArgument(name=argument, value=value),
            context=None if context is None else CompletionContext(arguments=_context_arguments(context)),
            mcp_server=mcp_server,
        )
        return ask(self._connection, events.COMPLETE, request, CompleteRet, timeout).completion


def check_uri(uri: Any) -> None:
    """Refuse, before sending, a URI the Computer would refuse (see the module docstring)."""
    if not isinstance(uri, str) or not uri:
        raise BadRequestError(f"uri must be a non-empty string, not {uri!r:.60}")
    scheme = uri.partition(":")[0]
    if scheme == dpe_uri.SCHEME:
        dpe_uri.parse_dpe_uri(uri)
    elif scheme == window_uri.SCHEME:
        window_uri.parse_window_uri(uri)


def content_value(content: ResourceContents) -> Any:
    """Parsed JSON for a JSON mime type, the text of other text, bytes for a blob."""
    if isinstance(content, BlobResourceContents):
        try:
            return base64.b64decode(content.blob, validate=True)
        except binascii.Error:
            raise InternalError(f"the blob of {content.uri!r} is not base64", details={"uri": content.uri}) from None
    if not is_json_mime_type(content.mime_type):
        return content.text
    try:
        return json.loads(content.text)
    except ValueError as exc:
        message = f"{content.uri!r} is labelled JSON but is not: {exc}"
        raise InternalError(message, details={"uri": content.uri}) from None


def is_json_mime_type(mime_type: str | None) -> bool:
    """``application/json`` and the ``+json`` types, parameters ignored."""
    if mime_type is None:
        return False
    essence = mime_type.partition(";")[0].strip().lower()
    return essence == "application/json" or essence.endswith("+json")


def _context_arguments(context: Mapping[str, Any]) -> dict[str, str]:
    """MCP wants strings; a page index given as an int is turned into one."""
    if not isinstance(context, Mapping):
        raise BadRequestError(f"context must be a mapping of argument names to values, not {type(context).__name__}")
    arguments = {}
    for name, value in context.items():
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(name, str) or not isinstance(value, str):
            raise BadRequestError(f"context argument {name!r} must be a string (or an int), not {value!r:.40}")
        arguments[name] = value
    return arguments
