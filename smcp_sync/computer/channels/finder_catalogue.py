"""The Finder (spec/finder.md): the `dpe://` resource channel of document summaries and
what an Agent gets for `client:get_finder`.

A document's value is its `CatalogueEntry` (its `DPEDocumentSummary`, checked and keyed
for ordering), built from one read of its Level 1 URI and cached until a change notice
drops it (docs/ARCHITECTURE.md, Wire decisions: never a read per document per call; and no parsing per document
per call either), and kept in catalogue order by the channel's `FinderIndex` as it
changes (no gathering, filtering or sorting of the whole catalogue per call either).
The reads happen in the background as soon as a server's documents are listed (see
`channel`); a catalogue not read in full within `wait` seconds (or that the
warm-up's pace shows cannot be) is answered from the documents read so far —
`total_count` counts those — and `server:update_finder` follows once the rest is read.
A document that cannot be read, is not a DPE document or names no document URI is left
out of the catalogue, not allowed to fail it (see `ResourceChannel.diagnostics`).
"""

from __future__ import annotations

import json
from typing import Reversible, Sequence

import attrs

from ...context.finder_order import CatalogueEntry, catalogue_entry, check_page, dpe_uri_level
from ...context.server_order import CallRecord
from ...protocol import events
from ...protocol.codec import from_wire
from ...protocol.dpe_uri import SCHEME
from ...protocol.errors import BadRequestError
from ...protocol.models import (
    DEFAULT_FINDER_LIMIT,
    DPEDocument,
    DPEDocumentSummary,
    ResourceContents,
    TextResourceContents,
)
from ..mcp.manager import ServerManager
from .channel import ResourceChannel
from .finder_index import FinderIndex


@attrs.frozen
class FinderPage:
    """One page of the catalogue; `total_count` counts every match, before paging.
    `complete` is False when documents still being read were left out (then
    `server:update_finder` is announced once they are read)."""

    documents: list[DPEDocumentSummary]
    total_count: int
    complete: bool = True


class FinderCatalogue:
    """The Finder: the `dpe://` channel of document summaries, kept in catalogue order by
    its `FinderIndex`, and the pages of it an Agent asks for."""

    def __init__(self, manager: ServerManager, timeout: float, wait: float) -> None:
        """`timeout`: per MCP request; `wait`: how long a reader waits for the warm-up."""
        self.index = FinderIndex()
        self.channel: ResourceChannel[CatalogueEntry] = ResourceChannel(
            "finder",
            SCHEME,
            events.UPDATE_FINDER,
            read=lambda server, uris: manager.read_resources(server, uris, timeout),
            check=_check_document_uri,
            value_of=lambda server, contents: catalogue_entry(document_summary(server, contents)),
            wait=wait,
            watcher=self.index,
        )

    def page(
        self,
        servers: Sequence[str],
        history: Reversible[CallRecord],
        keywords: Sequence[str] | None = None,
        file_type: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
    ) -> FinderPage:
        """One page of the catalogue; paging is checked before anything is read or waited for."""
        check_page(offset, limit)
        settled = self.channel.settle(servers, stale_ok=True)
        found, total_count = self.index.page(servers, history, keywords, file_type, offset, limit, settled.read_now)
        return FinderPage(documents=found, total_count=total_count, complete=settled.complete)


def _check_document_uri(uri: str) -> None:
    if dpe_uri_level(uri) != 1:
        raise BadRequestError("a listed dpe:// resource must be a document (Level 1) URI")


def document_summary(server: str, contents: Sequence[ResourceContents]) -> DPEDocumentSummary:
    """The catalogue entry of `server`'s document from its Level 1 answer (JSON text)."""
    text = next((c.text for c in contents if isinstance(c, TextResourceContents)), None)
    if text is None:
        raise BadRequestError("its Level 1 answer has no text contents")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadRequestError(f"its Level 1 answer is not JSON: {exc}") from None
    return from_wire(DPEDocument, data).to_summary(server)
