"""The Finder organiser (spec/finder.md, "Finder Organizer 策略", with DESIGN §3's ordering).

Pure: the Computer gathers the document summaries (cached, see DESIGN §3) and the
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
"""

from __future__ import annotations

import datetime
import logging
from typing import Iterable, Reversible, Sequence

from ..protocol.dpe_uri import parse_dpe_uri
from ..protocol.errors import BadRequestError, InvalidURIError
from ..protocol.models import DEFAULT_FINDER_LIMIT, MAX_FINDER_LIMIT, DPEDocumentSummary
from .server_order import CallRecord, order_servers

logger = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


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
    _check_int("offset", offset, 0, None)
    _check_int("limit", limit, 1, MAX_FINDER_LIMIT)
    needles = [keyword.casefold() for keyword in ([keywords] if isinstance(keywords, str) else keywords or ())]
    kept = [
        doc
        for doc in documents
        if _names_a_document(doc)
        and (not needles or _matches(doc, needles))
        and (not file_type or doc.file_type == file_type)
    ]
    rank = {server: i for i, server in enumerate(order_servers({doc.server for doc in kept}, history))}
    kept.sort(key=lambda doc: (rank[doc.server], *_recency_key(doc.last_modified)))
    return kept[offset : offset + limit], len(kept)


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        expected = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
        raise BadRequestError(f"{name} must be {expected}, got {value!r}", details={"field": name})


def _names_a_document(doc: DPEDocumentSummary) -> bool:
    try:
        level = parse_dpe_uri(doc.uri).level
    except InvalidURIError as exc:
        logger.warning("finder: skipping a document of %s: %s", doc.server, exc.message)
        return False
    if level != 1:
        logger.warning("finder: skipping %s of %s: not a document (Level 1) URI", doc.uri, doc.server)
    return level == 1


def _matches(doc: DPEDocumentSummary, needles: list[str]) -> bool:
    haystacks = [doc.title, *(doc.keywords or ()), doc.summary or ""]
    folded = [text.casefold() for text in haystacks]
    return any(needle in text for needle in needles for text in folded)


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
