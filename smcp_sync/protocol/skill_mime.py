"""MIME types of SKILL files (spec-0.3/skill.md §6.4): a fixed extension table, never the
host's registry, so one file has one type on every OS and in every SDK; and the "text
MIME" rule the Computer inlines by and the Agent decodes by.
"""

from __future__ import annotations

from pathlib import PurePosixPath

#: §6.4(3)'s baseline plus common binary types; anything else is application/octet-stream.
MIME_BY_EXTENSION = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".xml": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".rst": "text/x-rst",
    ".csv": "text/csv",
    ".html": "text/html",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".js": "application/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
    ".zip": "application/zip",
    ".gz": "application/gzip",
}
_TEXT_ESSENCES = frozenset(
    {"application/json", "application/xml", "application/yaml", "application/toml", "application/javascript"}
)
_TEXT_SUFFIXES = ("+json", "+xml", "+yaml")


def mime_type_of(rel_path: str) -> str:
    return MIME_BY_EXTENSION.get(PurePosixPath(rel_path).suffix.lower(), "application/octet-stream")


def is_text_mime(mime: str) -> bool:
    """§6.4(2): text/*, a +json/+xml/+yaml suffix, or one of the listed essences."""
    essence = mime.split(";", 1)[0].strip().lower()
    return essence.startswith("text/") or essence.endswith(_TEXT_SUFFIXES) or essence in _TEXT_ESSENCES
