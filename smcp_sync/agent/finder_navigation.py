"""The Finder from the Agent: the catalogue (`client:get_finder`) and the navigation
helpers that read a document level by level (spec/finder.md "Agent 端导航").

Each helper builds its `dpe://` URI with `DPEURI` (so it is valid before it is sent, or
`InvalidURIError` 4204 is raised locally) and reads it with `read_resource_contents`. The
URIs carry only the parameters that differ from the spec's defaults, so an MCP server that
matches URIs literally still recognises a plain document or page address.

Formats: ``"json"`` gives the DPE model; ``"markdown"`` / ``"text"`` give a string. An MCP
server that ignores `format` and answers JSON anyway (JSON mime type, or no mime type and
a body that is the expected JSON) is rendered here with `smcp_sync.context.dpe_render`,
so the host always gets the format it asked for.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Literal, Sequence, TypeVar, Union, cast, overload

from .transport import AgentTransport
from ..context.dpe_render import render_markdown, render_text
from ..protocol import events
from ..protocol.codec import from_wire
from ..protocol.dpe_uri import DPEURI, parse_dpe_uri
from ..protocol.errors import BadRequestError, InternalError, InvalidURIError
from ..protocol.models import (
    DEFAULT_FINDER_LIMIT,
    MAX_FINDER_LIMIT,
    DPEDocument,
    DPEElementDetail,
    DPEPage,
    GetFinderReq,
    GetFinderRet,
    MarkdownText,
    ResourceContents,
    TextResourceContents,
)
from .cache import ComputerCache
from .requests import DEFAULT_AGENT_REQUEST_TIMEOUT, ask, new_req_id
from .resources import is_json_mime_type

T = TypeVar("T")

#: A document: its `dpe://` URI (any URI of it), a parsed `DPEURI`, or anything with a
#: `uri` (a catalogue entry `DPEDocumentSummary`, a `DPEDocument`).
DocumentTarget = Union[str, DPEURI, Any]

_RENDERERS: dict[str, Callable[[Any], str]] = {"markdown": render_markdown, "text": render_text}


class FinderMethods:
    """The Agent's Finder requests (a mixin: needs the Agent's `_connection`,
    `finder_cache`, `prefetch_finder` and `read_resource_contents`)."""

    _connection: AgentTransport
    finder_cache: ComputerCache[GetFinderRet]
    prefetch_finder: bool
    read_resource_contents: Callable[..., list[ResourceContents]]

    def get_finder(
        self,
        computer: str,
        keywords: Sequence[str] | None = None,
        file_type: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> GetFinderRet:
        """The Computer's document catalogue: `documents` (`DPEDocumentSummary`, each with
        the `uri` to open it) and `total_count` (after filtering, before paging).
        `keywords` keeps documents whose title, keywords or summary match one of them,
        `file_type` those of exactly that type; `offset` >= 0, `limit` in 1–100.
        A Computer still reading its catalogue answers with the documents read so far
        (`total_count` counts those) and sends `notify:update_finder` once it has all."""
        request = GetFinderReq(
            agent=self._connection.name,
            req_id=new_req_id(),
            computer=computer,
            keywords=_strings("keywords", keywords),
            file_type=_file_type(file_type),
            offset=_bounded("offset", offset, 0, None),
            limit=_bounded("limit", limit, 1, MAX_FINDER_LIMIT),
        )
        ticket = self.finder_cache.ticket()
        finder = ask(self._connection, events.GET_FINDER, request, GetFinderRet, timeout)
        unfiltered = request.keywords is None and request.file_type is None
        if self.prefetch_finder and unfiltered and offset == 0 and limit == DEFAULT_FINDER_LIMIT:
            self.finder_cache.store(computer, finder, ticket)
        return finder

    def read_document(
        self, computer: str, document: DocumentTarget, timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT
    ) -> DPEDocument:
        """Level 1: the document's metadata (title, `page_count`, keywords, summary...)."""
        uri = document_uri(document)
        return self._read_json(computer, uri, DPEDocument, timeout)

    def read_document_pages(
        self,
        computer: str,
        document: DocumentTarget,
        offset: int = 0,
        limit: int = DEFAULT_FINDER_LIMIT,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> DPEDocument:
        """Level 1 with ``depth=pages``: the metadata plus `pages` (index, title,
        `element_count`, `uri` of each) from page `offset`, at most `limit` of them
        (1–100); `page_total` says how many there are."""
        start = None if offset == 0 else offset
        size = None if limit == DEFAULT_FINDER_LIMIT else limit
        uri = document_uri(document).with_query(depth="pages", offset=start, limit=size)
        return self._read_json(computer, uri, DPEDocument, timeout)

    @overload
    def read_page(
        self,
        computer: str,
        document: DocumentTarget,
        page_index: int,
        format: Literal["json"] = ...,
        categories: Sequence[str] | None = ...,
        timeout: float = ...,
    ) -> DPEPage: ...

    @overload
    def read_page(
        self,
        computer: str,
        document: DocumentTarget,
        page_index: int,
        format: Literal["markdown", "text"],
        categories: Sequence[str] | None = ...,
        timeout: float = ...,
    ) -> str: ...

    @overload
    def read_page(
        self,
        computer: str,
        document: DocumentTarget,
        page_index: int,
        format: str,
        categories: Sequence[str] | None = ...,
        timeout: float = ...,
    ) -> DPEPage | str: ...

    def read_page(
        self,
        computer: str,
        document: DocumentTarget,
        page_index: int,
        format: str = "json",
        categories: Sequence[str] | None = None,
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> DPEPage | str:
        """Level 2: page `page_index` (0 to `page_count` - 1) — a `DPEPage` for
        ``format="json"``, its rendering as a string for ``"markdown"`` / ``"text"``.
        `categories` keeps only those element types (e.g. ``["table", "pivot_table"]``).
        A page past the end raises `FinderError` 4202."""
        wanted = _strings("categories", categories)
        uri = document_uri(document).page(page_index).with_query(format=_format(format), categories=wanted)
        return self._read_dpe(computer, uri, DPEPage, format, timeout)

    @overload
    def read_element(
        self,
        computer: str,
        document: DocumentTarget,
        element_id: str,
        format: Literal["json"] = ...,
        timeout: float = ...,
    ) -> DPEElementDetail: ...

    @overload
    def read_element(
        self, computer: str, document: DocumentTarget, element_id: str, format: Literal["markdown", "text"], timeout: float = ...
    ) -> str: ...

    @overload
    def read_element(
        self, computer: str, document: DocumentTarget, element_id: str, format: str, timeout: float = ...
    ) -> DPEElementDetail | str: ...

    def read_element(
        self,
        computer: str,
        document: DocumentTarget,
        element_id: str,
        format: str = "json",
        timeout: float = DEFAULT_AGENT_REQUEST_TIMEOUT,
    ) -> DPEElementDetail | str:
        """Level 3: one element in full — a `DPEElementDetail` for ``format="json"``, its
        rendering for ``"markdown"`` / ``"text"``. An unknown id raises `FinderError` 4203."""
        uri = document_uri(document).element(element_id).with_query(format=_format(format))
        return self._read_dpe(computer, uri, DPEElementDetail, format, timeout)

    def _read_json(self, computer: str, uri: DPEURI, model: type[T], timeout: float) -> T:
        """A DPE read in ``format="json"``, which `decode_dpe` always parses to `model`."""
        return cast(T, self._read_dpe(computer, uri, model, "json", timeout))

    def _read_dpe(self, computer: str, uri: DPEURI, model: type[T], format: str, timeout: float) -> T | str:
        text = uri.build()
        contents = self.read_resource_contents(computer, text, timeout=timeout)
        decoded = decode_dpe(contents, model, format, text)
        return MarkdownText(decoded) if format == "markdown" and isinstance(decoded, str) else decoded


def document_uri(document: DocumentTarget) -> DPEURI:
    """The Level 1 address of `document` (query and sub-path of a given URI dropped)."""
    if isinstance(document, DPEURI):
        parsed = document
    elif isinstance(document, str):
        parsed = parse_dpe_uri(document)
    elif isinstance(getattr(document, "uri", None), str):
        parsed = parse_dpe_uri(document.uri)
    else:
        raise BadRequestError(f"expected a dpe:// URI or a document with a uri, not {type(document).__name__}")
    if parsed.doc_ref is None:
        raise InvalidURIError(
            f"{parsed.build()!r} is a catalogue (Level 0) URI; a document URI is dpe://host/doc-ref",
            details={"uri": parsed.build()},
        )
    return DPEURI.document(parsed.host, parsed.doc_ref)


def decode_dpe(contents: list[ResourceContents], model: type[T], format: str, uri: str) -> T | str:
    """The answer to a DPE read in the asked `format` (see the module docstring)."""
    content = next((c for c in contents if isinstance(c, TextResourceContents)), None)
    if content is None:
        raise InternalError(f"the answer to {uri} has no text contents", details={"uri": uri})
    if format == "json":
        return _parse(content, model, uri)
    if is_json_mime_type(content.mime_type):
        return _RENDERERS[format](_parse(content, model, uri))
    if content.mime_type is None and content.text.lstrip().startswith("{"):
        try:
            return _RENDERERS[format](_parse(content, model, uri))
        except InternalError:
            pass  # unlabelled text that merely starts like JSON
    return content.text


def _parse(content: TextResourceContents, model: type[T], uri: str) -> T:
    try:
        return from_wire(model, json.loads(content.text))
    except ValueError as exc:
        reason = f"not JSON ({exc})"
    except BadRequestError as exc:  # its message names the field
        reason = exc.message
    raise InternalError(f"the answer to {uri} is not a {model.__name__}: {reason}", details={"uri": uri})


def _format(format: str) -> str | None:
    """Omitted from the URI when it is the default, ``json`` (`DPEURI` checks the others)."""
    return None if format == "json" else format


def _strings(name: str, values: Sequence[str] | None) -> list[str] | None:
    """A list or tuple of strings, as a list. A bare string is refused: taken letter by
    letter it would silently mean something else."""
    if values is None:
        return None
    if isinstance(values, str):
        raise BadRequestError(f"{name} must be a list of strings; wrap a single one in a list: [{values!r:.40}]")
    if not isinstance(values, (list, tuple)) or not all(isinstance(value, str) for value in values):
        raise BadRequestError(f"{name} must be a list of strings, got {values!r:.80}")
    return list(values)


def _file_type(file_type: str | None) -> str | None:
    if file_type is not None and not isinstance(file_type, str):
        raise BadRequestError(f"file_type must be a string such as 'pdf', not {file_type!r:.40}")
    return file_type


def _bounded(name: str, value: Any, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in {low}–{high}"
        raise BadRequestError(f"{name} must be an integer {allowed}, got {value!r:.40}", details={"field": name})
    return value
