"""The folder the documents server serves: which files are documents, their doc_refs, and
what changed since the last look.

Why polling: a stat of every file every half second is cheap for a folder of documents,
works the same on every OS and file system (network shares included), and needs no
dependency. `rescan` compares each file's (mtime, size) with the last scan and re-parses
only the files that changed.

doc_ref: ``{slug}-{hash}`` — the ASCII letters and digits of the file's path relative
to the root (without extension, lower case, runs joined by ``-``, at most 32 characters;
``doc`` when there are none, e.g. a Chinese file name) and the first 6 hex digits of the
SHA-1 of the relative POSIX path (extension included). So it is URL-safe, short, readable
in a completion list, the same across restarts, and different for ``report.md`` and
``report.csv``. Renaming or moving a file makes it a new document (removed + added).

Served files: ``.md``/``.markdown``, ``.csv``, ``.tsv`` and ``.txt`` anywhere under the
root, UTF-8 (a BOM is fine), at most `MAX_FILE_BYTES`; hidden files and folders and
editor backups (``name~``) are ignored. A file that cannot be read or decoded is left
out with one warning (repeated only if the file changes again).

Not thread-safe: the documents server uses it from its one event loop.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import unicodedata
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

import attrs

from .markdown_parser import parse_markdown
from .parsed_document import Element, ParsedDocument, number_elements
from .tabular_parser import parse_table
from .text_parser import parse_text

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_SLUG = 32

Parser = Callable[[str, str], ParsedDocument]
#: extension → (file_type reported in the DPE metadata, parser(text, fallback title))
FORMATS: dict[str, tuple[str, Parser]] = {
    ".md": ("md", parse_markdown),
    ".markdown": ("md", parse_markdown),
    ".csv": ("csv", lambda text, title: parse_table(text, title, ",")),
    ".tsv": ("tsv", lambda text, title: parse_table(text, title, "\t")),
    ".txt": ("txt", parse_text),
}

Signature = tuple[int, int]  # (mtime in ns, size): what tells an edit apart


def doc_ref_for(relative_path: str) -> str:
    """The doc_ref of the file at `relative_path` (POSIX, relative to the root): the
    path's letters and digits in any script (``2026-q1-经营报告``; a URI percent-encodes
    them, `dpe_uri`) and a short hash that keeps similar names apart."""
    stem = unicodedata.normalize("NFC", str(PurePosixPath(relative_path).with_suffix("")))  # é, not e + accent
    slug = "-".join(re.findall(r"[^\W_]+", stem.lower()))[:MAX_SLUG].strip("-") or "doc"
    digest = hashlib.sha1(relative_path.encode("utf-8")).hexdigest()[:6]
    return f"{slug}-{digest}"


def servable_files(root: Path) -> Iterator[Path]:
    """The files under `root` that can be documents, in a stable order."""
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and not name.endswith("~") and Path(name).suffix.lower() in FORMATS:
                yield Path(directory, name)


@attrs.frozen
class LoadedDocument:
    doc_ref: str
    relative_path: str
    file_uri: str
    file_type: str
    last_modified: str  # ISO 8601 UTC, from the file's mtime
    parsed: ParsedDocument
    pages: tuple[tuple[Element, ...], ...]
    signature: Signature

    def find_element(self, element_id: str) -> Element | None:
        return next((e for page in self.pages for e in page if e.element_id == element_id), None)


@attrs.frozen
class Changes:
    """doc_refs added, removed and modified by one rescan."""

    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    modified: frozenset[str] = frozenset()


class DocumentLibrary:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._by_path: dict[str, LoadedDocument] = {}
        self._rejected: dict[str, Signature] = {}  # files left out, until they change

    def documents(self) -> list[LoadedDocument]:
        """Every document, most recently modified first (then by doc_ref)."""
        by_ref = sorted(self._by_path.values(), key=lambda d: d.doc_ref)
        return sorted(by_ref, key=lambda d: d.last_modified, reverse=True)

    def get(self, doc_ref: str) -> LoadedDocument | None:
        return next((d for d in self._by_path.values() if d.doc_ref == doc_ref), None)

    def rescan(self) -> Changes:
        """Look at the folder again; load new and changed files; say what changed."""
        before = {d.doc_ref: d.signature for d in self._by_path.values()}
        current: dict[str, LoadedDocument] = {}
        refs: dict[str, str] = {}
        for relative_path, path, signature in self._files():
            loaded = self._up_to_date(relative_path, path, signature)
            if loaded is None:
                continue
            clash = refs.get(loaded.doc_ref)
            if clash is not None:
                log.warning("%s has the same doc_ref as %s and is left out", relative_path, clash)
                continue
            refs[loaded.doc_ref] = relative_path
            current[relative_path] = loaded
        self._by_path = current
        after = {d.doc_ref: d.signature for d in current.values()}
        return Changes(
            added=frozenset(after.keys() - before.keys()),
            removed=frozenset(before.keys() - after.keys()),
            modified=frozenset(ref for ref in after.keys() & before.keys() if after[ref] != before[ref]),
        )

    def _files(self) -> Iterator[tuple[str, Path, Signature]]:
        """(relative POSIX path, path, signature) of every servable file."""
        for path in servable_files(self.root):
            try:
                stat = path.stat()
            except OSError:  # removed between listing and stat
                continue
            yield path.relative_to(self.root).as_posix(), path, (stat.st_mtime_ns, stat.st_size)

    def _up_to_date(self, relative_path: str, path: Path, signature: Signature) -> LoadedDocument | None:
        """The loaded document for this file version; None when it is left out."""
        known = self._by_path.get(relative_path)
        if known is not None and known.signature == signature:
            return known
        if self._rejected.get(relative_path) == signature:
            return None
        try:
            loaded = _load(relative_path, path, signature)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            log.warning("%s is not served: %s", relative_path, exc)
            self._rejected[relative_path] = signature
            return None
        self._rejected.pop(relative_path, None)
        return loaded


def _load(relative_path: str, path: Path, signature: Signature) -> LoadedDocument:
    mtime_ns, size = signature
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{size} bytes is more than the {MAX_FILE_BYTES} bytes served")
    file_type, parse = FORMATS[path.suffix.lower()]
    parsed = parse(path.read_bytes().decode("utf-8-sig"), path.stem)
    modified = datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc)
    return LoadedDocument(
        doc_ref=doc_ref_for(relative_path),
        relative_path=relative_path,
        file_uri=path.as_uri(),
        file_type=file_type,
        last_modified=modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        parsed=parsed,
        pages=number_elements(parsed.sections),
        signature=signature,
    )
