"""Where the OAuth credentials of remote MCP servers are kept between runs
(docs/computer/oauth.md).

A store is a small key -> text map (`OAuthTokenStore`); the `mcp` SDK's records (tokens,
the registered client) are put in it as JSON by `mcp.oauth`. Three kinds:

* `KeyringTokenStore`: the OS keyring (service ``smcp_sync-oauth``) through the optional
  `keyring` package (the ``[keyring]`` extra); the default where a keyring is usable;
* `FileTokenStore`: one JSON file per server under ``$XDG_CONFIG_HOME/smcp_sync/oauth``
  (else ``~/.config/smcp_sync/oauth``), written atomically with mode 0600; the default
  otherwise;
* `MemoryTokenStore`: this process's memory only, gone with it: for tests and
  short-lived hosts that must leave nothing behind (each run authorizes again);
* anything the host passes that has the three methods.

No value read or written here reaches a log line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Protocol

log = logging.getLogger(__name__)

KEYRING_SERVICE = "smcp_sync-oauth"
_NOT_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class OAuthTokenStore(Protocol):
    """Credentials by key; `key` is ``<server key>/<record>``, the value JSON text.
    Called from a worker thread, never from the event loop."""

    def load(self, key: str) -> str | None: ...

    def save(self, key: str, value: str) -> None: ...

    def delete(self, key: str) -> None: ...


def default_oauth_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/smcp_sync/oauth`` (a relative XDG_CONFIG_HOME is ignored, as the
    XDG spec says), else ``~/.config/smcp_sync/oauth``."""
    environ = os.environ if environ is None else environ
    config = environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if config and Path(config).is_absolute() else Path.home() / ".config"
    return base / "smcp_sync" / "oauth"


class FileTokenStore:
    """One JSON object per server key in `directory` (None: `default_oauth_dir()`), each
    file mode 0600 in a 0700 directory. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_oauth_dir()
        self._lock = threading.Lock()

    def path_for(self, key: str) -> Path:
        """The file that holds `key`'s server: its name, made file-safe, and a digest of the
        whole server key (two servers never share a file)."""
        server = key.rpartition("/")[0]
        digest = hashlib.sha256(server.encode()).hexdigest()[:12]
        return self.directory / f"{_NOT_IN_FILE_NAME.sub('_', server.split(' ', 1)[0])[:40]}-{digest}.json"

    def load(self, key: str) -> str | None:
        with self._lock:
            return self._read(key).get(key.rpartition("/")[2])

    def save(self, key: str, value: str) -> None:
        with self._lock:
            records = self._read(key)
            records[key.rpartition("/")[2]] = value
            self._write(key, records)

    def delete(self, key: str) -> None:
        with self._lock:
            records = self._read(key)
            if records.pop(key.rpartition("/")[2], None) is not None:
                self._write(key, records)

    def _read(self, key: str) -> dict[str, str]:
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("a file of OAuth credentials is unreadable (%s): ignored", type(exc).__name__)
            return {}
        return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}

    def _write(self, key: str, records: Mapping[str, str]) -> None:
        path = self.path_for(key)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".oauth-", dir=path.parent)  # created 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                json.dump(dict(records), out)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


class MemoryTokenStore:
    """Credentials kept in this object only (nothing on disk, nothing in a keyring): for
    tests and short-lived hosts. Thread-safe; share one between Computers to share tokens."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}
        self._lock = threading.Lock()

    def load(self, key: str) -> str | None:
        with self._lock:
            return self._records.get(key)

    def save(self, key: str, value: str) -> None:
        with self._lock:
            self._records[key] = value

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)

    def __repr__(self) -> str:
        with self._lock:
            return f"MemoryTokenStore({len(self._records)} records)"


class KeyringTokenStore:
    """The OS keyring, one entry per key (needs the ``[keyring]`` extra)."""

    def __init__(self, service: str = KEYRING_SERVICE) -> None:
        import keyring
        from keyring.errors import PasswordDeleteError

        self._keyring = keyring
        self._nothing_to_delete = PasswordDeleteError
        self._service = service

    def load(self, key: str) -> str | None:
        value = self._keyring.get_password(self._service, key)
        return value if isinstance(value, str) else None

    def save(self, key: str, value: str) -> None:
        self._keyring.set_password(self._service, key, value)

    def delete(self, key: str) -> None:
        try:
            self._keyring.delete_password(self._service, key)
        except self._nothing_to_delete:
            pass  # nothing stored under it


def default_token_store() -> OAuthTokenStore:
    """The keyring when the `keyring` package has a usable backend, else the file store."""
    try:
        import keyring
        from keyring.backends.fail import Keyring as NoKeyring
    except ImportError:
        return FileTokenStore()
    if isinstance(keyring.get_keyring(), NoKeyring):
        log.info("no usable keyring backend: OAuth tokens of MCP servers are kept in files (FileTokenStore)")
        return FileTokenStore()
    return KeyringTokenStore()
