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
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import attrs
import yaml

from ...blobs import stream_sha256
from ...protocol.errors import BadRequestError, ErrorCode, SkillError
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

#: The most YAML nodes a front matter may expand to (aliases count each time they are used:
#: a "billion laughs" block is refused, not expanded).
MAX_FRONT_MATTER_NODES = 10_000


class FrontMatterError(BadRequestError):
    """A SKILL.md front matter that is not a YAML mapping: the package is left out."""


def split_skill_md(text: str) -> tuple[str | None, str]:
    """The front matter block of a SKILL.md (the lines between the opening and closing
    ``---``) and its body (everything after the closing line, line endings kept); no
    closed front matter: ``(None, text)``. The fences are found as a2c-smcp 0.4.2 does."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return None, text


def parse_front_matter(block: str | None) -> dict[str, Any]:
    """The front matter as YAML (`yaml.safe_load`, as a2c-smcp 0.4.2 reads it), with
    scalars YAML gives as other types (dates, sets) turned into text so the fields stay
    JSON; `FrontMatterError` for invalid YAML, a document that is not a mapping, or one
    over `MAX_FRONT_MATTER_NODES`. No front matter: ``{}``."""
    if block is None or not block.strip():
        return {}
    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 2}"  # line 1 is the opening ---
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise FrontMatterError(f"its {DEFAULT_SKILL_FILE} front matter is not valid YAML: {problem}{where}") from None
    if not isinstance(loaded, dict):
        raise FrontMatterError(f"its {DEFAULT_SKILL_FILE} front matter is not a mapping")
    budget = [MAX_FRONT_MATTER_NODES]
    return {str(key): _plain(value, budget) for key, value in loaded.items()}


def _plain(value: Any, budget: list[int]) -> Any:
    """`value` with only JSON types (str, numbers, bools, None, lists, str-keyed dicts)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise FrontMatterError(f"its {DEFAULT_SKILL_FILE} front matter has more than {MAX_FRONT_MATTER_NODES} values")
    if isinstance(value, dict):
        return {str(key): _plain(item, budget) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, budget) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value.isoformat() if hasattr(value, "isoformat") else value)


def read_front_matter(root: Path) -> dict[str, Any]:
    """`OSError` when SKILL.md cannot be read, `FrontMatterError` when its front matter is bad."""
    with open(root / DEFAULT_SKILL_FILE, encoding="utf-8", errors="replace") as file:
        return parse_front_matter(split_skill_md(file.read())[0])


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
