"""The files of one staged SKILL package (spec-0.3/skill.md §6.4, §7, §9): its SKILL.md
front matter, the bytes an Agent gets for a `rel_path`, their MIME type, and the sandbox
that keeps every read inside the package root.

The bytes served are what the Agent consumes: SKILL.md without its front matter, any
other file as it is; `total_size` and `sha256` describe exactly those bytes, so a body
inlined now and a blob read later agree. MIME types come from `skill_mime`.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import attrs

from ...blobs import stream_sha256
from ...protocol.errors import ErrorCode, SkillError
from ...protocol.models import DEFAULT_SKILL_FILE
from ...protocol.skill_mime import is_text_mime, mime_type_of
from .exposure import SecretFileError, is_secret_name, open_inside


def not_accessible(reason: str, rel_path: str, **details: Any) -> SkillError:
    """The 4017 of error-handling.md (`reason`: traversal / forbidden / not_found / too_large)."""
    return SkillError(
        "Skill resource not accessible",
        code=ErrorCode.SKILL_RESOURCE_NOT_ACCESSIBLE,
        details={"reason": reason, "rel_path": rel_path[:200], **details},
    )


# -- front matter --------------------------------------------------------------------------

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_ITEM = re.compile(r"^\s+-\s*(.*?)\s*$")
_NESTED = re.compile(r"^\s+([A-Za-z_][\w.-]*)\s*:\s*(.*?)\s*$")


def split_skill_md(text: str) -> tuple[dict[str, Any], str]:
    """The front matter of a SKILL.md and its body (everything after the closing ``---``
    line, line endings kept); no closed front matter: ``({}, text)``."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return _parse_front_matter(lines[1:index]), "".join(lines[index + 1 :])
    return {}, text


def _parse_front_matter(lines: list[str]) -> dict[str, Any]:
    """The YAML subset SKILL.md headers use, without a YAML library: ``key: scalar``,
    ``key: [a, b]``, and under a bare ``key:`` a block list or a one-level map
    (``metadata:``). Lines outside that subset are ignored, never an error."""
    fields: dict[str, Any] = {}
    current: str | None = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key = _KEY.match(line)
        if key is not None:
            current, value = key.group(1), key.group(2)
            fields[current] = _scalar_or_list(value) if value else None
            continue
        if current is None:
            continue
        item, nested, held = _ITEM.match(line), _NESTED.match(line), fields[current]
        if item is not None and (held is None or isinstance(held, list)):
            fields[current] = [*(held or []), _scalar(item.group(1))]
        elif nested is not None and (held is None or isinstance(held, dict)):
            fields[current] = {**(held or {}), nested.group(1): _scalar(nested.group(2))}
    return fields


def _scalar_or_list(value: str) -> Any:
    if value.startswith("[") and value.endswith("]"):
        return [_scalar(part) for part in value[1:-1].split(",") if part.strip()]
    return _scalar(value)


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def read_front_matter(root: Path) -> dict[str, Any]:
    with open(root / DEFAULT_SKILL_FILE, encoding="utf-8", errors="replace") as file:
        return split_skill_md(file.read())[0]


# -- resources -------------------------------------------------------------------------------


@attrs.frozen
class SkillResource:
    """One resource of a package as the Agent gets it: the bytes' size, sha256 and MIME
    type, and `read(offset, length)` for them (a blob source reads through it)."""

    rel_path: str
    mime_type: str
    total_size: int
    sha256: str
    read: Callable[[int, int], bytes] = attrs.field(repr=False, eq=False)
    #: Whether `read` serves bytes held in memory (SKILL.md without its front matter):
    #: a blob handle for them counts against the handles' memory bound.
    in_memory: bool = False

    @property
    def is_text(self) -> bool:
        return is_text_mime(self.mime_type)

    def readable_while(self, alive: Callable[[], bool]) -> SkillResource:
        """This resource, whose reads fail with `OSError` once `alive()` is false (its
        skill orphaned): a blob handle minted for it then answers 4018 gone."""
        read = self.read

        def guarded(offset: int, length: int) -> bytes:
            if not alive():
                raise OSError(f"the skill of {self.rel_path} is no longer offered")
            return read(offset, length)

        return attrs.evolve(self, read=guarded)


def inline_body(resource: SkillResource, budget: int) -> str | None:
    """The resource as text when it is text (MIME and UTF-8) of at most `budget` bytes."""
    if not resource.is_text or resource.total_size > budget:
        return None
    try:
        return resource.read(0, resource.total_size).decode("utf-8")
    except UnicodeDecodeError:
        return None


def resolve(root: Path, rel_path: str) -> tuple[Path, Path]:
    """The real package folder and the real file `rel_path` names inside it, checked in
    the order that leaks nothing (§9.2): traversal (absolute, ``..``, a symlink out)
    before forbidden (a secret file of `exposure`, existing or not, in any case) before
    not_found. Open the file with `exposure.open_inside`, never by its path."""
    parts = PurePosixPath(rel_path).parts
    if not rel_path or "\\" in rel_path or "\x00" in rel_path or PurePosixPath(rel_path).is_absolute() or ".." in parts:
        raise not_accessible("traversal", rel_path)
    if any(is_secret_name(part) for part in parts):
        raise not_accessible("forbidden", rel_path)
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root.joinpath(*parts)))
    if target != real_root and real_root not in target.parents:
        raise not_accessible("traversal", rel_path)
    if any(is_secret_name(part) for part in target.relative_to(real_root).parts):
        raise not_accessible("forbidden", rel_path)
    if not target.is_file():
        raise not_accessible("not_found", rel_path)
    return real_root, target


def skill_resource(root: Path, rel_path: str, max_size: int) -> SkillResource:
    """The resource `rel_path` of the package at `root`; 4017 when it may not be read or
    is over `max_size` bytes (then nothing of it is read). SKILL.md is known by the file
    it resolves to (``./SKILL.md`` is SKILL.md too) and served without its front matter."""
    real_root, target = resolve(root, rel_path)
    try:
        with open_inside(real_root, target) as file:
            if target == real_root / DEFAULT_SKILL_FILE:
                body = split_skill_md(file.read().decode("utf-8", errors="replace"))[1].encode("utf-8")
                _check_size(rel_path, len(body), max_size)
                return SkillResource(
                    rel_path, "text/markdown", len(body), hashlib.sha256(body).hexdigest(), lambda o, n: body[o : o + n],
                    in_memory=True,
                )
            size = os.fstat(file.fileno()).st_size
            _check_size(rel_path, size, max_size)
            digest = stream_sha256(file)
    except SecretFileError:
        raise not_accessible("forbidden", rel_path) from None
    except OSError:  # swapped for a link or removed since `resolve`
        raise not_accessible("not_found", rel_path) from None
    return SkillResource(rel_path, mime_type_of(rel_path), size, digest, _file_reader(root, rel_path))


def _check_size(rel_path: str, size: int, max_size: int) -> None:
    if size > max_size:
        raise not_accessible("too_large", rel_path, total_size=size)



def _file_reader(root: Path, rel_path: str) -> Callable[[int, int], bytes]:
    """Reads the file, running the sandbox again on each read (§9.2: a blob handle is
    never trusted to still point where it may read); `OSError` once it may not."""

    def read(offset: int, length: int) -> bytes:
        try:
            real_root, target = resolve(root, rel_path)
        except SkillError as exc:
            raise OSError(f"{rel_path} is no longer readable: {exc.details.get('reason')}") from None
        with open_inside(real_root, target) as file:
            file.seek(offset)
            return file.read(length)

    return read
