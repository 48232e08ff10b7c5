"""`dpe://` URIs of the Finder (spec/finder.md): parse, validate, build, navigate.

Four levels: ``dpe://host`` (catalogue), ``dpe://host/doc-ref`` (document),
``.../doc-ref/pages/{N}`` (page), ``.../doc-ref/elements/{ID}`` (element), each with the
optional query parameters `format`, `depth`, `offset`, `limit`, `categories`.

Every failure is `InvalidURIError` (4204) whose message names the spec's rule (1–8) or
the shared syntax rule of `_uri_syntax`, and the offending value. Decisions where the
spec is silent:

* doc-ref and element id are one path segment each: a ``/`` inside them is
  percent-encoded (``a%2Fb``), like every other reserved character; `build()` encodes,
  parsing decodes. ``dpe://h/doc/elements/a/b`` breaks rule 3.
* The eight rules are the whole contract, so a parameter on a level it does not apply to
  (``depth`` on a page URI) is validated but accepted: servers ignore it, and refusing it
  would make us reject URIs other SDKs route. Unknown parameters, and a parameter given
  twice, are refused: a misspelt ``fromat=markdown`` silently falling back to JSON would
  be worse than a clear 4204.
* `page_index` and `offset` are capped at 2**63-1 (what 64-bit peers can read).
* Absent parameters stay None (the server applies the spec's defaults), so a URI
  round-trips: ``parse_dpe_uri(u.build()) == u`` and `build()` of a parse is canonical
  (parameters in the order format, depth, offset, limit, categories).
"""

from __future__ import annotations

from typing import Any

import attrs

from . import _uri_syntax as syntax
from .errors import InvalidURIError
from .models.dpe_documents import ELEMENT_CATEGORIES, MAX_FINDER_LIMIT

SCHEME = "dpe"
FORMATS = ("json", "markdown", "text")
DEPTHS = ("metadata", "pages")
MAX_INDEX = 2**63 - 1
QUERY_FIELDS = ("format", "depth", "offset", "limit", "categories")
_PAGES, _ELEMENTS = "pages", "elements"


def _as_tuple(value: Any) -> Any:
    """Lists become tuples (hashable, immutable); anything else is left for `_check` to refuse."""
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class DPEURI:
    """A validated dpe URI; `level` says which of the four it addresses."""

    host: str
    doc_ref: str | None = None
    page_index: int | None = None
    element_id: str | None = None
    format: str | None = None
    depth: str | None = None
    offset: int | None = None
    limit: int | None = None
    categories: tuple[str, ...] | None = attrs.field(default=None, converter=_as_tuple)

    def __attrs_post_init__(self) -> None:
        with syntax.reporting(InvalidURIError, SCHEME):
            _check(**attrs.asdict(self, recurse=False))

    @classmethod
    def document(cls, host: str, doc_ref: str) -> DPEURI:
        """Level 1 URI of a document."""
        return cls(host=host, doc_ref=doc_ref)

    @property
    def level(self) -> int:
        if self.doc_ref is None:
            return 0
        if self.page_index is not None:
            return 2
        return 3 if self.element_id is not None else 1

    def page(self, page_index: int) -> DPEURI:
        """Level 2 URI of a page of this URI's document (no query parameters)."""
        return DPEURI(host=self.host, doc_ref=self.doc_ref, page_index=page_index)

    def element(self, element_id: str) -> DPEURI:
        """Level 3 URI of an element of this URI's document (no query parameters)."""
        return DPEURI(host=self.host, doc_ref=self.doc_ref, element_id=element_id)

    def with_query(self, **params: Any) -> DPEURI:
        """The same address with these query parameters set (None removes one)."""
        unknown = sorted(set(params) - set(QUERY_FIELDS))
        if unknown:
            raise TypeError(f"unknown dpe query parameters {unknown}; expected some of {', '.join(QUERY_FIELDS)}")
        return attrs.evolve(self, **params)

    def build(self) -> str:
        path = ""
        if self.doc_ref is not None:
            path = "/" + syntax.encode(self.doc_ref)
        if self.page_index is not None:
            path += f"/{_PAGES}/{self.page_index}"
        if self.element_id is not None:
            path += f"/{_ELEMENTS}/" + syntax.encode(self.element_id)
        categories = None if self.categories is None else ",".join(self.categories)
        query = {"format": self.format, "depth": self.depth, "offset": self.offset, "limit": self.limit}
        return f"{SCHEME}://{self.host}{path}" + syntax.build_query({**query, "categories": categories})

    def __str__(self) -> str:
        return self.build()


def _check(
    host: Any,
    doc_ref: Any = None,
    page_index: Any = None,
    element_id: Any = None,
    format: Any = None,
    depth: Any = None,
    offset: Any = None,
    limit: Any = None,
    categories: Any = None,
) -> None:
    syntax.check_host(host)
    if doc_ref is not None:
        syntax.check_text(doc_ref, "doc-ref")
    elif page_index is not None or element_id is not None:
        raise syntax.RuleBroken("rule 3: a pages/ or elements/ sub-path needs a doc-ref before it")
    if page_index is not None and element_id is not None:
        raise syntax.RuleBroken("rule 3: a URI addresses a page or an element, not both")
    if page_index is not None:
        syntax.check_int(page_index, "rule 3: page index", 0, MAX_INDEX)
    if element_id is not None:
        syntax.check_text(element_id, "rule 3: element id")
    _check_choice(format, FORMATS, "rule 4: format")
    _check_choice(depth, DEPTHS, "rule 5: depth")
    if offset is not None:
        syntax.check_int(offset, "rule 6: offset", 0, MAX_INDEX)
    if limit is not None:
        syntax.check_int(limit, "rule 7: limit", 1, MAX_FINDER_LIMIT)
    if categories is not None:
        _check_categories(categories)


def _check_choice(value: Any, choices: tuple[str, ...], label: str) -> None:
    if value is not None and value not in choices:
        raise syntax.RuleBroken(f"{label} must be one of {', '.join(choices)}, got {value!r}")


def _check_categories(categories: Any) -> None:
    if not isinstance(categories, tuple) or not categories:
        raise syntax.RuleBroken(f"rule 8: categories must be a non-empty list of element types, got {categories!r}")
    unknown = [c for c in categories if not isinstance(c, str) or c not in ELEMENT_CATEGORIES]
    if unknown:
        expected = ", ".join(sorted(ELEMENT_CATEGORIES))
        raise syntax.RuleBroken(f"rule 8: categories {unknown!r} are not element types; expected some of {expected}")


def parse_dpe_uri(text: str) -> DPEURI:
    """The `DPEURI` of `text`; raises `InvalidURIError` (4204) naming the broken rule."""
    with syntax.reporting(InvalidURIError, SCHEME, text):
        host, segments, query = syntax.split(text, SCHEME)
        fields: dict[str, Any] = {"host": host, **_address(segments)}
        params = syntax.known_params(query, QUERY_FIELDS, strict=True)
        fields.update(
            format=params.get("format"),
            depth=params.get("depth"),
            offset=_optional_int(params.get("offset"), "rule 6: offset", 0, MAX_INDEX),
            limit=_optional_int(params.get("limit"), "rule 7: limit", 1, MAX_FINDER_LIMIT),
            categories=None if "categories" not in params else tuple(params["categories"].split(",")),
        )
        _check(**fields)  # the constructor checks too, but only here can the message quote `text`
    return DPEURI(**fields)


def _address(segments: list[str]) -> dict[str, Any]:
    """doc_ref / page_index / element_id from the decoded path segments."""
    if not segments:
        return {}
    doc_ref, sub = segments[0], segments[1:]
    if not sub:
        return {"doc_ref": doc_ref}
    if len(sub) == 2 and sub[0] == _PAGES:
        return {"doc_ref": doc_ref, "page_index": syntax.parse_int(sub[1], "rule 3: page index", 0, MAX_INDEX)}
    if len(sub) == 2 and sub[0] == _ELEMENTS:
        return {"doc_ref": doc_ref, "element_id": sub[1]}
    raise syntax.RuleBroken(f"rule 3: sub-path {'/'.join(sub)!r} must be pages/{{N}} or elements/{{ID}}")


def _optional_int(text: str | None, label: str, low: int, high: int) -> int | None:
    return None if text is None else syntax.parse_int(text, label, low, high)


def is_dpe_uri(text: object) -> bool:
    """Whether `text` is a valid dpe URI (any object; never raises)."""
    try:
        parse_dpe_uri(text)  # type: ignore[arg-type]
    except InvalidURIError:
        return False
    return True
