"""Where uploads land on the Computer: one folder, and only names made safe for it.

The final name is the upload's random id plus the sanitized hint (letters, digits, `.`,
`_`, `-`; no separators, no leading dots), so no hint can name a path outside the folder,
a hidden file or `..`; the resolved path is checked to be inside the folder anyway.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_HINT = 64
#: Subfolder of the landing folder holding the parts of unfinished uploads.
PARTS_DIR = ".parts"


def safe_name(upload_id: str, name_hint: str | None) -> str:
    """`upload_id`, then `_` and what is left of the hint once made harmless."""
    base = (name_hint or "").replace("\\", "/").rsplit("/", 1)[-1]
    fragment = _UNSAFE.sub("_", base.strip())[:_MAX_HINT].strip("._-")
    return f"{upload_id}_{fragment}" if fragment else upload_id


class LandingFolder:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.parts = self.root / PARTS_DIR

    def prepare(self) -> None:
        """Create the folder and its parts subfolder (OSError when that is impossible)."""
        self.parts.mkdir(parents=True, exist_ok=True)

    def final_path(self, upload_id: str, name_hint: str | None) -> Path:
        return self._inside(self.root / safe_name(upload_id, name_hint))

    def part_path(self, upload_id: str) -> Path:
        return self._inside(self.parts / f"{safe_name(upload_id, None)}.part")

    def _inside(self, path: Path) -> Path:
        resolved = path.resolve()
        if resolved.parent not in (self.root, self.parts):
            raise ValueError(f"{path} is not inside the landing folder")
        return resolved
