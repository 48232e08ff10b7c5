"""An MCP server (stdio) that serves a folder of real files as Finder ``dpe://`` documents.

    python -m smcp_sync.demo.servers.documents_server [--root DIR] [--host-id com.example.docs]
                                                      [--poll-interval 0.5]

    --root DIR          the folder to serve (default: the bundled sample documents)
    --host-id ID        the dpe:// host of every URI (default com.example.docs)
    --poll-interval S   seconds between two looks at the folder (default 0.5)

What it offers (spec/finder.md, spec/finder-sdk-guide.md "MCP Server 实现指南"):

* capabilities ``resources.subscribe`` and ``resources.listChanged``, ``completions``;
* ``resources/list``: one Level 1 URI ``dpe://{host}/{doc_ref}`` per document (name =
  doc_ref, title, description = summary, ``application/json``, ``annotations.lastModified``),
  newest first; the Level 0 URI ``dpe://{host}`` is readable but not listed, because a
  Computer reads every listed ``dpe://`` URI as a document;
* ``resources/templates/list``: ``dpe://{host}/{doc_ref}/pages/{page_index}`` and
  ``dpe://{host}/{doc_ref}/elements/{element_id}``;
* ``resources/read`` of Level 0–3 with every query parameter (``format``, ``depth``,
  ``offset``, ``limit``, ``categories``); ``format=markdown`` / ``text`` answer
  ``text/markdown`` / ``text/plain`` (see `dpe_views`);
* ``completion/complete`` for doc_ref, page_index and element_id (see `finder_completion`);
* errors 4201 / 4202 / 4203 / 4204 in the convention of `finder_errors`;
* the folder is polled: a file added or removed sends ``notifications/resources/list_changed``
  to the client; an edited file sends ``notifications/resources/updated`` for each URI
  of that document the client subscribed to (its Level 1 URI, or a page / element URI).

Which files are documents, their doc_refs and element ids: see `document_library` and
the parsers (`markdown_parser`, `tabular_parser`, `text_parser`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from .. import SAMPLE_DOCUMENTS
from .document_library import DocumentLibrary
from .dpe_views import render, view_for
from .finder_completion import complete, templates
from .finder_errors import as_mcp_error, document_not_found
from .notifying_server import RESOURCE_NOT_FOUND, NotifyingServer, run_stdio
from smcp_sync import __version__
from smcp_sync.protocol.dpe_uri import DPEURI, parse_dpe_uri
from smcp_sync.protocol.errors import SMCPError

log = logging.getLogger("documents_server")

Ctx = ServerRequestContext[Any, Any]


class DocumentsServer(NotifyingServer):
    def __init__(self, library: DocumentLibrary, host: str) -> None:
        super().__init__(
            "documents",
            version=__version__,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_completion=self._complete,
        )
        self.library = library
        self.host = host

    async def watch(self, interval: float) -> None:
        """Poll the folder forever; announce what changed."""
        while True:
            await anyio.sleep(interval)
            try:
                changes = self.library.rescan()
            except Exception:  # e.g. the folder became unreadable: keep serving, try again
                log.exception("scanning %s failed", self.library.root)
                continue
            if changes.added or changes.removed:
                await self.notify_list_changed()
            if changes.modified:
                await self.notify_updated(lambda uri: self._doc_ref_of(uri) in changes.modified)

    def check_subscription(self, uri: str) -> None:
        doc_ref = self._parsed(uri).doc_ref
        if doc_ref is not None and self.library.get(doc_ref) is None:
            raise as_mcp_error(document_not_found(doc_ref))

    def _parsed(self, text: str) -> DPEURI:
        try:
            uri = parse_dpe_uri(text)
        except SMCPError as exc:
            raise as_mcp_error(exc) from None
        if uri.host != self.host:
            raise MCPError(RESOURCE_NOT_FOUND, f"this server serves dpe://{self.host}, not dpe://{uri.host}")
        return uri

    def _doc_ref_of(self, text: str) -> str | None:
        try:
            return parse_dpe_uri(text).doc_ref
        except SMCPError:
            return None

    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                uri=DPEURI.document(self.host, doc.doc_ref).build(),
                name=doc.doc_ref,
                title=doc.parsed.title,
                description=doc.parsed.summary,
                mime_type="application/json",
                annotations=types.Annotations(last_modified=doc.last_modified),
            )
            for doc in self.library.documents()
        ]
        return types.ListResourcesResult(resources=resources)

    async def _list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        listed = [
            types.ResourceTemplate(
                uri_template=t.uri_template, name=t.name, description=t.description, mime_type="application/json"
            )
            for t in templates(self.host)
        ]
        return types.ListResourceTemplatesResult(resource_templates=listed)

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = self._parsed(params.uri)
        try:
            view = view_for(uri, self.library)
        except SMCPError as exc:
            raise as_mcp_error(exc) from None
        mime_type, text = render(view, uri.format or "json")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=mime_type, text=text)]
        )

    async def _complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        try:
            return types.CompleteResult(completion=complete(self.library, self.host, params))
        except SMCPError as exc:
            raise as_mcp_error(exc) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=SAMPLE_DOCUMENTS, help="folder to serve")
    parser.add_argument("--host-id", default="com.example.docs", help="dpe:// host of the URIs")
    parser.add_argument("--poll-interval", type=float, default=0.5, help="seconds between folder scans")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root} is not a folder")
    if args.poll_interval <= 0:
        parser.error("--poll-interval must be positive")
    try:
        DPEURI(host=args.host_id)
    except SMCPError as exc:
        parser.error(f"--host-id: {exc.message}")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(levelname)s: %(message)s")
    library = DocumentLibrary(args.root)
    library.rescan()
    server = DocumentsServer(library, args.host_id)
    run_stdio(server, lambda: server.watch(args.poll_interval))


if __name__ == "__main__":
    main()
