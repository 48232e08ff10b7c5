"""Resource requests an Agent makes through the Computer (docs/wire/index.md, *smcp_sync
extensions*): `client:read_resource`, `client:get_resources` and `client:complete`.
Servers are named by their bundle_id.

Routing: a `dpe://` or `window://` URI (or resource template) goes to the MCP server that
lists URIs on its host — the first in the configuration when several do. `mcp_server`
names the server for any other URI, and when given it always wins (it also settles a
host clash). Nothing of the URI is changed on the way: its query parameters (`format`,
`depth`, `offset`, `limit`, `categories`) are the MCP server's to apply.

Errors: an invalid `dpe://` URI is 4204 before any MCP server is asked; a `dpe://` host
no server lists is 4201 (there is no such document here). The Finder errors an MCP
server reports keep their code (see `manager`); a server that only says "resource not
found" (MCP -32002, or -32602 in later revisions) gets the code of the level it was
asked for: 4201 for a document or catalogue, 4202 for a page, 4203 for an element.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...protocol.dpe_uri import SCHEME as DPE_SCHEME
from ...protocol.dpe_uri import parse_dpe_uri
from ...protocol.errors import BadRequestError, ErrorCode, NotFoundError, SMCPError, cut_short
from ...protocol.models import (
    A2CResource,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    PromptReference,
    ResourceContents,
)
from ...protocol.models.resources import a2c_resource
from ..mcp.failures import dpe_not_found
from ..mcp.manager import ServerManager
from .channel import ResourceChannel, scheme_and_host
from .exposure import names_a_secret, secret_refused
from .watch import ResourceWatch


class ResourceRequests:
    def __init__(
        self,
        manager: ServerManager,
        watch: ResourceWatch,
        channels: Sequence[ResourceChannel[Any]],
        timeout: float,
    ) -> None:
        self._manager = manager
        self._watch = watch
        self._channels = {channel.scheme: channel for channel in channels}
        self._timeout = timeout

    def read(self, uri: str, mcp_server: str | None = None) -> list[ResourceContents]:
        """`resources/read` of `uri` on its MCP server, contents as the server returned them;
        4017 before any server is asked when `uri` names a secret file (`exposure`)."""
        if names_a_secret(uri):
            raise secret_refused(uri)
        found = scheme_and_host(uri)
        dpe = parse_dpe_uri(uri) if found is not None and found[0] == DPE_SCHEME else None
        server = mcp_server if mcp_server is not None else self._owner(uri, "reading")
        try:
            return self._manager.read_resource(server, uri, self._timeout)
        except SMCPError as exc:
            if dpe is None:
                raise
            raise dpe_not_found(uri, dpe, exc) from None

    def page(self, mcp_server: str, cursor: str | None = None) -> tuple[list[A2CResource], str | None]:
        """One page of `mcp_server`'s `resources/list` (its bundle_id) as `A2CResource`s,
        less those naming a secret file (`exposure`), and the cursor of the next (None:
        last). 4014 for an unknown server, 4015 for one without the resources capability."""
        resources, next_cursor = self._manager.list_resources_page(mcp_server, cursor, self._timeout)
        shown = [a2c_resource(resource) for resource in resources if not names_a_secret(resource.uri)]
        return shown, next_cursor or None

    def complete(
        self,
        ref: CompletionReference,
        argument: CompletionArgument,
        context: CompletionContext | None = None,
        mcp_server: str | None = None,
    ) -> Completion:
        """`completion/complete` on the server owning the template (or `mcp_server`)."""
        if mcp_server is None:
            if isinstance(ref, PromptReference):
                raise BadRequestError(
                    f"completing an argument of prompt {ref.name!r} needs mcp_server: prompts have no host to route by",
                    details={"field": "mcp_server"},
                )
            mcp_server = self._owner(ref.uri, "completing")
        return self._manager.complete(mcp_server, ref, argument, context, self._timeout)

    def _owner(self, uri: str, doing: str) -> str:
        """The MCP server that lists URIs on `uri`'s host, for a scheme of the channels."""
        found = scheme_and_host(uri)
        channel = self._channels.get(found[0]) if found is not None else None
        if found is None or channel is None:
            schemes = " or ".join(f"{scheme}://" for scheme in self._channels)
            raise BadRequestError(
                f"{doing} {cut_short(repr(uri))} needs mcp_server: only {schemes} URIs are routed by their host",
                details={"field": "mcp_server"},
            )
        host = found[1]
        owner = channel.owner_of(host, self._watch.current_servers())
        if owner is not None:
            return owner
        message = f"no MCP server of this computer lists {channel.scheme}://{host} URIs"
        if channel.scheme == DPE_SCHEME:
            raise SMCPError.for_code(ErrorCode.DOCUMENT_NOT_FOUND, message, {"uri": cut_short(uri)})
        raise NotFoundError(message, details={"uri": cut_short(uri)})
