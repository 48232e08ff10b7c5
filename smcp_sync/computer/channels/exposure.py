"""What a Computer never shows an Agent: files that hold secrets (`.skillenv`, whose
values the skill sandbox of spec-0.3 skill.md §9.1 keeps from every Agent-facing answer).

One boundary for every route an Agent has to a file: `client:get_skill` and the blob
handles it mints (`skill_files`), `client:read_resource` and `client:get_resources`
(`reads`), and the channels' listings (Desktop, Finder, Skills). A name is
compared without regard to case, since a case-insensitive disk opens `.SkillEnv` as
`.skillenv`; a URI is compared segment by segment once percent-decoding leaves it
unchanged, since an MCP server decodes what it is given. A package file is opened by
`open_inside`, which follows no link, so a link swapped in after the sandbox's check
(by a script run in the package folder, say) opens nothing.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from ...protocol.errors import ErrorCode, SkillError, cut_short

#: Names of files no Agent ever reads, compared case-folded.
SECRET_FILE_NAMES = frozenset({".skillenv"})

_SEPARATORS = re.compile(r"[/\\]")


class SecretFileError(PermissionError):
    """A file opened by another name is a secret file (a hard link to it)."""


def is_secret_name(name: str) -> bool:
    return name.casefold() in SECRET_FILE_NAMES


def names_a_secret(uri: str) -> bool:
    """Whether any segment of `uri`'s host or path names a secret file, however the
    segment is percent-encoded."""
    try:
        parts = urlsplit(uri)
        text = f"{parts.netloc}/{parts.path}"
    except ValueError:
        text = uri
    for _ in range(8):  # every layer of encoding peeled off: %252E -> %2E -> .
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return any(is_secret_name(segment) for segment in _SEPARATORS.split(text))


def secret_refused(uri: str) -> SkillError:
    """The 4017 ``forbidden`` a request for a secret file gets, whether it exists or not."""
    return SkillError(
        "Skill resource not accessible",
        code=ErrorCode.SKILL_RESOURCE_NOT_ACCESSIBLE,
        details={"reason": "forbidden", "uri": cut_short(uri)},
    )


def open_inside(root: Path, target: Path) -> BinaryIO:
    """Open the regular file `target` (a real path inside the real folder `root`) for
    reading, walking from `root` one component at a time without following any link;
    `OSError` when a component is (now) a link or `target` is no regular file;
    `SecretFileError` when it is a hard link to a secret file beside it or at `root`."""
    parts = target.relative_to(root).parts
    if not parts:
        raise IsADirectoryError(f"{target.name} is a folder")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise IsADirectoryError(f"{parts[-1]} is no regular file")
        if found.st_nlink > 1 and _is_secret_file(found, {root, target.parent}):
            raise SecretFileError(f"{parts[-1]} is another name of a secret file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _is_secret_file(found: os.stat_result, folders: set[Path]) -> bool:
    for folder in folders:
        try:
            names = [name for name in os.listdir(folder) if is_secret_name(name)]
        except OSError:
            continue
        for name in names:
            try:
                other = os.stat(folder / name, follow_symlinks=False)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (found.st_dev, found.st_ino):
                return True
    return False
