"""doc_refs of the documents server (`demo.servers.document_library.doc_ref_for`):
readable in any script, percent-encoded in a dpe:// URI, distinct for distinct files."""

from __future__ import annotations

import unicodedata

import pytest

from smcp_sync.demo.servers.document_library import doc_ref_for
from smcp_sync.protocol.dpe_uri import DPEURI, parse_dpe_uri


@pytest.mark.parametrize(
    "path, slug, uri_path",
    [
        ("2026-Q1-经营报告.md", "2026-q1-经营报告", "2026-q1-%E7%BB%8F%E8%90%A5%E6%8A%A5%E5%91%8A"),
        ("报告.md", "报告", "%E6%8A%A5%E5%91%8A"),
        ("notes/Ünïcode Café.md", "notes-ünïcode-café", "notes-%C3%BCn%C3%AFcode-caf%C3%A9"),
        ("sales-2026-q1.csv", "sales-2026-q1", "sales-2026-q1"),
        ("!!!.md", "doc", "doc"),
    ],
)
def test_a_file_name_in_any_script_keeps_a_readable_doc_ref(path: str, slug: str, uri_path: str) -> None:
    doc_ref = doc_ref_for(path)
    assert doc_ref.rpartition("-")[0] == slug and len(doc_ref.rpartition("-")[2]) == 6
    uri = DPEURI.document("com.example.docs", doc_ref).build()
    assert uri.startswith(f"dpe://com.example.docs/{uri_path}-")
    assert parse_dpe_uri(uri).doc_ref == doc_ref


def test_decomposed_and_composed_names_read_alike_and_similar_names_stay_apart() -> None:
    composed = doc_ref_for("Café.md")
    decomposed = doc_ref_for(unicodedata.normalize("NFD", "Café.md"))
    assert composed.rpartition("-")[0] == decomposed.rpartition("-")[0] == "café"
    assert len({doc_ref_for(p) for p in ("a b.md", "a-b.md", "A_B.md", "a/b.md")}) == 4
