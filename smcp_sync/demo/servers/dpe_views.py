"""What ``resources/read`` answers for each level of a ``dpe://`` URI (spec/finder.md,
"Finder 内容格式"), built from the library's documents with the smcp_sync DPE models, and
rendered as JSON, Markdown or plain text.

Decisions where the spec is silent:

* Level 0 lists every document with its Level 1 metadata (no paging: `offset`/`limit`
  are Level 1 parameters), most recently modified first.
* Level 1 `depth=pages`: `offset` past the last page gives an empty `pages` list, not an
  error (4202 is about addressing a page); `page_limit` echoes the limit applied.
* Level 2 `element_count` is the page's element count before the `categories` filter
  (the same number the page index shows); `elements` holds what passed the filter.
* Level 3 adds `doc_ref`, `page_index`, `uri` and `metadata` (where in the file the
  element came from); a table's content also gets `total_rows` and `total_columns`.
* Markdown and text render through `smcp_sync.context.dpe_render`; the Level 0 catalogue,
  which it does not render, is each document's rendering, separated by blank lines.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Union

from .document_library import DocumentLibrary, LoadedDocument
from .finder_errors import document_not_found, element_not_found, page_out_of_range
from .parsed_document import Element
from smcp_sync.context.dpe_render import render_markdown, render_text
from smcp_sync.protocol.codec import to_wire
from smcp_sync.protocol.dpe_uri import DPEURI
from smcp_sync.protocol.models._fields import evolve
from smcp_sync.protocol.models.dpe_documents import (
    DEFAULT_FINDER_LIMIT,
    DPECatalogue,
    DPEDocument,
    DPEElementDetail,
    DPEPage,
    DPEPageSummary,
)

View = Union[DPECatalogue, DPEDocument, DPEPage, DPEElementDetail]

MIME_TYPES = {"json": "application/json", "markdown": "text/markdown", "text": "text/plain"}


def view_for(uri: DPEURI, library: DocumentLibrary) -> View:
    """The content `uri` addresses; raises the Finder `SMCPError`s 4201–4203."""
    if uri.doc_ref is None:
        documents = [document_metadata(uri.host, doc) for doc in library.documents()]
        return DPECatalogue(documents=documents, total_count=len(documents))
    doc = library.get(uri.doc_ref)
    if doc is None:
        raise document_not_found(uri.doc_ref)
    if uri.page_index is not None:
        return page_view(uri.host, doc, uri.page_index, uri.categories)
    if uri.element_id is not None:
        return element_view(uri.host, doc, uri.element_id)
    if uri.depth == "pages":
        return with_page_index(uri.host, doc, uri.offset or 0, uri.limit or DEFAULT_FINDER_LIMIT)
    return document_metadata(uri.host, doc)


def document_metadata(host: str, doc: LoadedDocument) -> DPEDocument:
    parsed = doc.parsed
    return DPEDocument(
        doc_ref=doc.doc_ref,
        uri=DPEURI.document(host, doc.doc_ref).build(),
        file_uri=doc.file_uri,
        file_type=doc.file_type,
        title=parsed.title,
        page_count=len(doc.pages),
        keywords=list(parsed.keywords) if parsed.keywords else None,
        summary=parsed.summary,
        last_modified=doc.last_modified,
    )


def with_page_index(host: str, doc: LoadedDocument, offset: int, limit: int) -> DPEDocument:
    base = DPEURI.document(host, doc.doc_ref)
    pages = [
        DPEPageSummary(
            page_index=index,
            title=doc.parsed.sections[index].title,
            element_count=len(doc.pages[index]),
            uri=base.page(index).build(),
            doc_ref=doc.doc_ref,
        )
        for index in range(offset, min(offset + limit, len(doc.pages)))
    ]
    return evolve(
        document_metadata(host, doc), pages=pages, page_offset=offset, page_limit=limit, page_total=len(doc.pages)
    )


def page_view(host: str, doc: LoadedDocument, page_index: int, categories: tuple[str, ...] | None) -> DPEPage:
    if page_index >= len(doc.pages):
        raise page_out_of_range(doc.doc_ref, page_index, len(doc.pages))
    elements = doc.pages[page_index]
    shown = [e for e in elements if categories is None or e.block.category in categories]
    return DPEPage(
        page_index=page_index,
        title=doc.parsed.sections[page_index].title,
        uri=DPEURI.document(host, doc.doc_ref).page(page_index).build(),
        elements=[
            DPEElementDetail(
                element_id=e.element_id, category=e.block.category, content=e.block.content, summary=e.block.summary
            )
            for e in shown
        ],
        element_count=len(elements),
        doc_ref=doc.doc_ref,
    )


def element_view(host: str, doc: LoadedDocument, element_id: str) -> DPEElementDetail:
    element = doc.find_element(element_id)
    if element is None:
        raise element_not_found(doc.doc_ref, element_id)
    return DPEElementDetail(
        element_id=element.element_id,
        category=element.block.category,
        content=_full_content(element),
        summary=element.block.summary,
        doc_ref=doc.doc_ref,
        page_index=element.page_index,
        uri=DPEURI.document(host, doc.doc_ref).element(element_id).build(),
        metadata=dict(element.block.metadata) or None,
    )


def _full_content(element: Element) -> dict[str, Any]:
    content = dict(element.block.content)
    if element.block.category == "table":
        content.update(total_rows=len(content["rows"]), total_columns=len(content["headers"]))
    return content


def render(view: View, format: str) -> tuple[str, str]:
    """(mimeType, text) of `view` in `format` (json, markdown or text)."""
    if format == "markdown":
        return MIME_TYPES[format], _rendered(view, render_markdown)
    if format == "text":
        return MIME_TYPES[format], _rendered(view, render_text)
    return MIME_TYPES["json"], json.dumps(to_wire(view), ensure_ascii=False)


def _rendered(view: View, render_one: Callable[[Any], str]) -> str:
    if isinstance(view, DPECatalogue):
        return "\n\n".join(render_one(doc) for doc in view.documents)
    return render_one(view)
