"""Watches the user skills folder and announces its changes (`server:update_skills`).

Why: the user's packages are scanned on each request, but an Agent only asks again when
told; spec-0.3/skill.md says a Computer SHOULD notify, and a2c-smcp 0.4.2 does
(docs/computer/skills.md, *Skills that announce changes*). What counts, as in 0.4.2: a
``SKILL.md`` created, changed, deleted or moved anywhere under the folder, and a folder
deleted or moved (a ``rm -rf pkg/`` may report only the folder); other files are
ignored. A burst of changes is one announcement (a `Debouncer`: `quiet` seconds after the
last change, at most `MAX_ANNOUNCE_DELAY` after the first).

How: with the optional `watchdog` package (the ``[watch]`` extra) the OS tells us
(inotify, FSEvents...); without it, or when the folder cannot be watched (missing,
unreadable), a thread compares a fingerprint of the packages every `poll_interval`
seconds: the folder's packages and each ``SKILL.md``'s size and modification time, at
most `MAX_POLLED_PACKAGES` of them (a folder with more is polled partly, warned once).
`stop()` ends every thread either way.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable

from ...protocol import events
from ...threads.debounce import Debouncer
from .watch import MAX_ANNOUNCE_DELAY

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
#: Seconds between two looks at the folder when polling.
DEFAULT_POLL_INTERVAL = 1.0
#: Packages one poll looks at, at most.
MAX_POLLED_PACKAGES = 10_000

Fingerprint = frozenset[tuple[str, int, int]]


class SkillFolderWatch:
    """Calls `announce(events.UPDATE_SKILLS)` after changes under `folder` (module doc)."""

    def __init__(
        self,
        name: str,
        folder: Path,
        announce: Callable[[str], None],
        quiet: float,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        use_watchdog: bool = True,
    ) -> None:
        self.folder = folder
        self._name = name
        self._poll_interval = poll_interval
        self._use_watchdog = use_watchdog
        max_delay = max(quiet, MAX_ANNOUNCE_DELAY)
        self._debouncer: Debouncer[str] = Debouncer(f"{name}-skills", announce, quiet, max_delay)
        self._stopped = threading.Event()
        self._observer: Any = None
        self._poller: threading.Thread | None = None
        self._warned_partial = False

    @property
    def polling(self) -> bool:
        """Whether the folder is polled (no watchdog, or the folder cannot be watched)."""
        return self._poller is not None

    def start(self) -> None:
        observer = self._watchdog_observer() if self._use_watchdog else None
        if observer is not None:
            self._observer = observer
            return
        self._poller = threading.Thread(target=self._poll, name=f"smcp-computer-skillwatch[{self._name}]", daemon=True)
        self._poller.start()

    def stop(self, timeout: float) -> None:
        self._stopped.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._poller is not None:
            self._poller.join(timeout)
        self._debouncer.stop(timeout)

    def _changed(self) -> None:
        self._debouncer.trigger(events.UPDATE_SKILLS)

    # -- watchdog --------------------------------------------------------------------------

    def _watchdog_observer(self) -> Any:
        try:
            from watchdog.events import FileSystemEventHandler  # the optional [watch] extra
            from watchdog.observers import Observer
        except ImportError:
            log.info("no watchdog package: the user skills folder is polled every %gs", self._poll_interval)
            return None

        changed = self._changed

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type not in ("created", "modified", "deleted", "moved"):
                    return  # opened, closed...: nothing changed
                paths = [event.src_path, getattr(event, "dest_path", "")]
                folder_gone = event.is_directory and event.event_type in ("deleted", "moved")
                if folder_gone or any(os.path.basename(os.fsdecode(p)) == SKILL_FILE for p in paths if p):
                    changed()

        observer = Observer()
        observer.name = f"smcp-computer-skillwatch[{self._name}]"
        try:
            observer.schedule(Handler(), str(self.folder), recursive=True)
            observer.start()
        except OSError as exc:
            log.warning("cannot watch the user skills folder (%s): polling it", type(exc).__name__)
            observer.stop()
            return None
        return observer

    # -- polling ---------------------------------------------------------------------------

    def _poll(self) -> None:
        last = self._fingerprint()
        while not self._stopped.wait(self._poll_interval):
            now = self._fingerprint()
            if now != last:
                last = now
                self._changed()

    def _fingerprint(self) -> Fingerprint:
        """(package, SKILL.md size, mtime) of each package of the folder."""
        seen: set[tuple[str, int, int]] = set()
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if len(seen) >= MAX_POLLED_PACKAGES:
                        self._warn_partial()
                        break
                    try:
                        stat = os.stat(os.path.join(entry.path, SKILL_FILE))
                    except OSError:
                        continue  # no package (yet): a folder without SKILL.md is no change
                    seen.add((entry.name, stat.st_size, stat.st_mtime_ns))
        except OSError:
            return frozenset()
        return frozenset(seen)

    def _warn_partial(self) -> None:
        if not self._warned_partial:
            self._warned_partial = True
            log.warning("user skills folder has over %d entries: only that many are polled", MAX_POLLED_PACKAGES)
