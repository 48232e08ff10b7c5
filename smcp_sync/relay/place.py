"""`RelayPlace`: the folder where a host's Agent relay lives, and who may open it.

Why a folder of its own: the relay's socket carries Agent credentials and tool calls, so
only the user who runs the workers may reach it. The folder is 0700 and owned by that
user (a folder that is not is refused, never repaired), the socket 0600, and the key the
two ends prove to each other (`authkey`) a 0600 file made once with `O_EXCL`. Two lock
files serialise who starts the relay (`start.lock`) and which relay runs (`relay.lock`,
held by the running relay for its whole life: docs/ARCHITECTURE.md, The Agent relay).
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

import attrs

#: Environment variable naming the relay's folder (else `default_folder()`).
FOLDER_VARIABLE = "SMCP_RELAY_DIR"
_KEY_BYTES = 32
#: The longest path a Unix socket may have (sun_path, 108 bytes with its NUL, on Linux).
_MAX_SOCKET_PATH = 107


class RelayPlaceError(OSError):
    """The relay's folder or one of its files is not private to this user."""


def default_folder() -> Path:
    """``$SMCP_RELAY_DIR``, else ``$XDG_RUNTIME_DIR/smcp-sync-relay``, else
    ``<tmp>/smcp-sync-relay-<uid>``: one relay per user and host."""
    chosen = os.environ.get(FOLDER_VARIABLE)
    if chosen:
        return Path(chosen)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "smcp-sync-relay"
    return Path(tempfile.gettempdir()) / f"smcp-sync-relay-{os.getuid()}"


def _absolute(value: str | os.PathLike[str]) -> Path:
    return Path(value).absolute()


@attrs.frozen
class RelayPlace:
    folder: Path = attrs.field(converter=_absolute)

    @classmethod
    def at(cls, folder: str | os.PathLike[str] | None = None) -> RelayPlace:
        return cls(default_folder() if folder is None else Path(folder))

    @property
    def socket_path(self) -> str:
        return str(self.folder / "relay.sock")

    @property
    def log_path(self) -> Path:
        return self.folder / "relay.log"

    @property
    def start_lock(self) -> Path:
        return self.folder / "start.lock"

    @property
    def relay_lock(self) -> Path:
        return self.folder / "relay.lock"

    def prepare(self) -> None:
        """Make the folder (0700) if missing; refuse one that others could enter, or whose
        socket's path is longer than a Unix socket's path may be."""
        if len(os.fsencode(self.socket_path)) > _MAX_SOCKET_PATH:
            raise RelayPlaceError(
                f"the relay folder {self.folder} is too deep: its socket's path would be longer than "
                f"{_MAX_SOCKET_PATH} bytes (choose a shorter relay_dir or $SMCP_RELAY_DIR)"
            )
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise RelayPlaceError(f"cannot make the relay folder {self.folder}: {exc.strerror}") from None
        _require_private(self.folder, stat.S_IFDIR, 0o700)

    def authkey(self) -> bytes:
        """The shared key, made on first use: written to a 0600 file of its own, then
        linked into place (two first users never see a half-written key)."""
        self.prepare()
        path = self.folder / "authkey"
        if not path.exists():
            draft = self.folder / f".authkey.{secrets.token_hex(8)}"
            descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "wb") as file:
                    file.write(secrets.token_bytes(_KEY_BYTES))
                os.link(draft, path)
            except FileExistsError:
                pass  # another process made it first: theirs is the key
            finally:
                draft.unlink(missing_ok=True)
        _require_private(path, stat.S_IFREG, 0o600)
        return path.read_bytes()

    def open_private(self, path: Path) -> int:
        """A file descriptor for `path` (created 0600, appended to), e.g. a lock or the log."""
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            _require_private(path, stat.S_IFREG, 0o600)
        except BaseException:
            os.close(descriptor)
            raise
        return descriptor


def _require_private(path: Path, kind: int, mode: int) -> None:
    info = os.lstat(path)
    if stat.S_IFMT(info.st_mode) != kind or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & ~mode:
        raise RelayPlaceError(
            f"{path} must be a {'folder' if kind == stat.S_IFDIR else 'file'} owned by uid {os.getuid()} "
            f"with mode {mode:04o} or stricter (it has uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o})"
        )
