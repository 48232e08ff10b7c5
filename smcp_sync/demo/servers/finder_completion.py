"""``completion/complete`` for the two ``dpe://`` resource templates (seed 002, and
spec/finder-sdk-guide.md "自动补全"): the chain doc_ref → page_index → element_id.

* ``doc_ref``: the documents whose doc_ref starts with the typed value (case-insensitive),
  most recently modified first.
* ``page_index``: needs ``context.arguments.doc_ref``; the page numbers that start with
  the typed value, in order.
* ``element_id``: needs ``context.arguments.doc_ref``; with ``page_index`` in the context
  too, only that page's elements; reading order.

At most 100 values; `total` counts every match and `hasMore` says whether some were cut.
A template or argument that is not ours, or a missing ``doc_ref``, is an invalid-params
error (-32602, seed 002); an unknown doc_ref or page index is the Finder error of
`finder_errors` (4201 / 4202), so a client learns why nothing matched.
"""

from __future__ import annotations

import re

import attrs
import mcp.types as types
from mcp.shared.exceptions import MCPError

from .document_library import DocumentLibrary, LoadedDocument
from .finder_errors import document_not_found, page_out_of_range

MAX_VALUES = 100



@attrs.frozen
class Template:
    uri_template: str
    arguments: tuple[str, ...]
    name: str
    description: str


def templates(host: str) -> list[Template]:
    """The resource templates of this host (``resources/templates/list``)."""
    return [
        Template(f"dpe://{host}/{{doc_ref}}/pages/{{page_index}}", ("doc_ref", "page_index"),
                 "Document page", "A page of a document and its elements"),
        Template(f"dpe://{host}/{{doc_ref}}/elements/{{element_id}}", ("doc_ref", "element_id"),
                 "Document element", "One element of a document, in full"),
    ]  # fmt: skip


def complete(library: DocumentLibrary, host: str, params: types.CompleteRequestParams) -> types.Completion:
    ref, name, prefix = params.ref, params.argument.name, params.argument.value
    if not isinstance(ref, types.ResourceTemplateReference):
        raise MCPError(types.INVALID_PARAMS, "only ref/resource completions are offered (this server has no prompts)")
    arguments = {t.uri_template: t.arguments for t in templates(host)}
    if ref.uri not in arguments:
        expected = ", ".join(arguments)
        raise MCPError(types.INVALID_PARAMS, f"unknown resource template {ref.uri!r}; expected one of {expected}")
    if name not in arguments[ref.uri]:
        raise MCPError(types.INVALID_PARAMS, f"template {ref.uri!r} has no argument {name!r}")
    context = (params.context.arguments if params.context else None) or {}
    if name == "doc_ref":
        return _matching([doc.doc_ref for doc in library.documents()], prefix)
    doc = _context_document(library, context, name)
    if name == "page_index":
        return _matching([str(i) for i in range(len(doc.pages))], prefix)
    pages = doc.pages if "page_index" not in context else [doc.pages[_context_page(doc, context["page_index"])]]
    return _matching([e.element_id for page in pages for e in page], prefix)


def _context_document(library: DocumentLibrary, context: dict[str, str], name: str) -> LoadedDocument:
    doc_ref = context.get("doc_ref")
    if not doc_ref:
        raise MCPError(types.INVALID_PARAMS, f"completing {name!r} needs context.arguments.doc_ref")
    doc = library.get(doc_ref)
    if doc is None:
        raise document_not_found(doc_ref)
    return doc


def _context_page(doc: LoadedDocument, text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text):
        raise MCPError(types.INVALID_PARAMS, f"context.arguments.page_index must be a page number, got {text!r}")
    if int(text) >= len(doc.pages):
        raise page_out_of_range(doc.doc_ref, int(text), len(doc.pages))
    return int(text)


def _matching(candidates: list[str], prefix: str) -> types.Completion:
    matches = [c for c in candidates if c.casefold().startswith(prefix.casefold())]
    return types.Completion(values=matches[:MAX_VALUES], total=len(matches), has_more=len(matches) > MAX_VALUES)
