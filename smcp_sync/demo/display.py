"""How the demo shows itself: readable sections for people, or one JSON object per line
(``--json``) for scripts — the same steps either way.

The sample documents are partly Chinese and the headings use box-drawing characters; a
terminal whose encoding cannot show them gets replacement characters (JSON: escapes),
never an error.
"""

from __future__ import annotations

import codecs
import json
from typing import Any, TextIO

from .steps import Step

RULE_WIDTH = 72


class TextDisplay:
    """Headed sections; the steps' lines as they are (already shortened)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def start(self, url: str, office: str, documents: str) -> None:
        self._print(f"smcp-sync demo: Server, Computer and Agent in this process, at {url}")
        self._print(f"documents served from {documents}")

    def step(self, number: int, total: int, step: Step) -> None:
        heading = f"── {number}/{total} {step.title} "
        self._print(f"\n{heading}{'─' * max(3, RULE_WIDTH - len(heading))}")
        for line in step.lines:
            self._print(line)

    def finish(self, failed: list[str]) -> None:
        if failed:
            self._print(f"\n{len(failed)} step(s) failed: {', '.join(failed)}")
        else:
            self._print("\nEvery step answered.")

    def serving(self, url: str, office: str, computer: str) -> None:
        self._print(f"\nServing at {url}, office {office!r}, until Ctrl-C. In another terminal:")
        self._print(f"  smcp-sync agent --url {url} --office {office} tools {computer}")

    def _print(self, text: str) -> None:
        encoding = self.out.encoding or "utf-8"
        print(text.encode(encoding, "replace").decode(encoding), file=self.out, flush=True)


class JsonDisplay:
    """One JSON object per line: ``{"step": key, "title": ..., "ok": bool, ...data}``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def start(self, url: str, office: str, documents: str) -> None:
        self._emit({"step": "start", "url": url, "office_id": office, "documents": documents})

    def step(self, number: int, total: int, step: Step) -> None:
        self._emit({"step": step.key, "title": step.title, "ok": step.error is None, **step.data})

    def finish(self, failed: list[str]) -> None:
        self._emit({"step": "finish", "ok": not failed, "failed": failed})

    def serving(self, url: str, office: str, computer: str) -> None:
        self._emit({"step": "serving", "url": url, "office_id": office, "computer": computer})

    def _emit(self, record: dict[str, Any]) -> None:
        unicode_out = codecs.lookup(self.out.encoding or "utf-8").name.startswith("utf")
        print(json.dumps(record, ensure_ascii=not unicode_out), file=self.out, flush=True)
