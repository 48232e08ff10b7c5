"""The Finder organiser (spec/finder.md, "Finder Organizer 策略", with the ordering rule of docs/ARCHITECTURE.md, Wire decisions).

Pure: the Computer gathers the document summaries (cached, see docs/ARCHITECTURE.md, Wire decisions) and the
tool-call history; this filters, orders and pages them. Decisions where the spec is
silent:

* Keywords match case-insensitively (Unicode casefold) as substrings of the title, of
  any one of the document's keywords, or of the summary; a document is kept when any
  keyword hits. An empty keyword list means no keyword filter (and an empty keyword
  matches every document, as an empty substring does).
* `file_type` matches exactly (case-sensitive); None or "" means no filter.
* A document is kept only if its `uri` is a valid Level 1 `dpe://` URI: a catalogue
  entry names a document, not a catalogue, page or element.
* `last_modified` is compared as a point in time (ISO 8601, ``Z`` or an offset; no
  offset means UTC); a value that does not parse counts as missing. Documents with equal
  or missing times keep their input order.

Why `CatalogueEntry`: checking a document's URI, parsing its time and folding its text
cost more than filtering and sorting, and a catalogue is asked for far more often than
it changes. The Computer makes an entry once, when it caches a summary, and pages
entries with `organize_catalogue`; `organize_finder` is the same over plain summaries.
"""

from __future__ import annotations

import datetime
import functools
import logging
from typing import Iterable, Reversible, Sequence

import attrs

from ..protocol.dpe_uri import parse_dpe_uri
from ..protocol.errors import BadRequestError, InvalidURIError, SMCPError
from ..protocol.models import DEFAULT_FINDER_LIMIT, MAX_FINDER_LIMIT, DPEDocumentSummary
from .server_order import CallRecord, order_servers

logger = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: What joins an entry's folded texts in `CatalogueEntry.folded_text`: a keyword holding it
#: is looked for in each text alone (`CatalogueFilter.keeps`), never across two.
TEXT_SEPARATOR = "\0"


@attrs.frozen
class CatalogueEntry:
    """A document summary with what ordering and filtering need of it, computed once."""

    summary: DPEDocumentSummary
    recency: tuple[int, datetime.timedelta]
    folded_texts: tuple[str, ...]
    #: The folded texts joined by NUL: one substring search per keyword, not one per text.
    folded_text: str = attrs.field(default=attrs.Factory(lambda self: TEXT_SEPARATOR.join(self.folded_texts), takes_self=True))


def catalogue_entry(doc: DPEDocumentSummary) -> CatalogueEntry:
    """`doc` checked and keyed; raises `InvalidURIError` (4204) when its `uri` is not a
    document (Level 1) `dpe://` URI."""
    if dpe_uri_level(doc.uri) != 1:
        raise InvalidURIError(f"{doc.uri} is not a document (Level 1) URI", details={"uri": doc.uri})
    texts = (doc.title, *(doc.keywords or ()), doc.summary or "")
    return CatalogueEntry(doc, _recency_key(doc.last_modified), tuple(text.casefold() for text in texts))


@functools.lru_cache(maxsize=1024)
def dpe_uri_level(uri: str) -> int:
    """The level of a `dpe://` URI (`InvalidURIError` if it is not one). Remembered for
    the last URIs: the Computer checks a document's listed URI before reading it, and
    the same URI again in the summary it read."""
    return parse_dpe_uri(uri).level


def organize_finder(
    documents: Iterable[DPEDocumentSummary],
    keywords: Sequence[str] | None = None,
    file_type: str | None = None,
    history: Reversible[CallRecord] = (),
    offset: int = 0,
    limit: int = DEFAULT_FINDER_LIMIT,
) -> tuple[list[DPEDocumentSummary], int]:
    """One page of the catalogue and `total_count`, the number of documents that passed the
    filters (before paging). A single string as `keywords` is one keyword. Raises
    `BadRequestError` (400) for `offset` < 0 or `limit` outside [1, 100]."""
    entries = (entry for entry in map(_entry_or_none, documents) if entry is not None)
    return organize_catalogue(entries, keywords, file_type, history, offset, limit)


def organize_catalogue(
    entries: Iterable[CatalogueEntry],
    keywords: Sequence[str] | None = None,
    file_type: str | None = None,
    history: Reversible[CallRecord] = (),
    offset: int = 0,
    limit: int = DEFAULT_FINDER_LIMIT,
) -> tuple[list[DPEDocumentSummary], int]:
    """`organize_finder` over entries made by `catalogue_entry`."""
    check_page(offset, limit)
    wanted = catalogue_filter(keywords, file_type)
    kept = [entry for entry in entries if wanted.keeps(entry)]
    rank = {server: i for i, server in enumerate(order_servers({entry.summary.server for entry in kept}, history))}
    kept.sort(key=lambda entry: (rank[entry.summary.server], *entry.recency))
    return [entry.summary for entry in kept[offset : offset + limit]], len(kept)


@attrs.frozen
class CatalogueFilter:
    """What a query keeps: folded keywords (empty: no keyword filter) and a file type
    ("": no filter). Hashable, so an index can keep the matches of each filter."""

    needles: tuple[str, ...] = ()
    file_type: str = ""

    def keeps(self, entry: CatalogueEntry) -> bool:
        if self.file_type and entry.summary.file_type != self.file_type:
            return False
        if not self.needles:
            return True
        text = entry.folded_text
        for needle in self.needles:
            if needle in text if TEXT_SEPARATOR not in needle else any(needle in part for part in entry.folded_texts):
                return True
        return False


def catalogue_filter(keywords: Sequence[str] | None, file_type: str | None) -> CatalogueFilter:
    """The filter of a query's `keywords` (a single string is one keyword) and `file_type`."""
    needles = [keyword.casefold() for keyword in ([keywords] if isinstance(keywords, str) else keywords or ())]
    return CatalogueFilter(tuple(dict.fromkeys(needles)), file_type or "")


def check_page(offset: int, limit: int) -> None:
    """`BadRequestError` (400) for `offset` < 0 or `limit` outside [1, 100]."""
    _check_int("offset", offset, 0, None)
    _check_int("limit", limit, 1, MAX_FINDER_LIMIT)


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
        raise BadRequestError(f"{name} must be {expected}, got {value!r}", details={"field": name})


def _entry_or_none(doc: DPEDocumentSummary) -> CatalogueEntry | None:
    try:
        return catalogue_entry(doc)
    except SMCPError as exc:
        logger.warning("finder: skipping a document of %s: %s", doc.server, exc.message)
        return None



def _recency_key(last_modified: str | None) -> tuple[int, datetime.timedelta]:
    """Sorts newest first, and missing or unparsable times after every real one."""
    moment = _parse_time(last_modified)
    if moment is None:
        return (1, datetime.timedelta(0))
    return (0, _EPOCH - moment)


def _parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    if text[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat does not read the Z suffix
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)
