"""The Skills (spec-0.3/skill.md): the `skill://` resource channel of the MCP servers'
SKILL packages, the local user's packages, and what an Agent gets for `client:get_skills`
and `client:get_skill`.

Skills are the third instance of the resource-channel mechanism (docs/ARCHITECTURE.md, Layers): the same
listing, change detection, warm-up and debounced `server:update_skills` as the Desktop
and the Finder. What differs is what a listed resource becomes: among a server's
`skill://` resources the package roots are those declaring ``_meta.source`` (§3) and not
lying under another root; the value of a root is its *staged* package, a local folder
read through the sandbox of `skill_files`:

* ``mounted``: the server's ``_meta.mount_dir`` is used in place (§3 allows mounting it
  directly; nothing is copied, and every read still passes the sandbox);
* ``resources``: the root's sub-resources (``skill://host/<skill>/<rel_path>``) are read
  and written under ``<home>/mcp/<bundle_id>/<digest>/<leaf>/``, a folder private to the
  Computer (`Stager._write_files` says why the digest);
* ``archive``: fetched and unpacked by `skill_archives` under
  ``<home>/mcp/<bundle_id>/<archive sha256>/<leaf>/``.

A package whose SKILL.md lacks a valid ``name`` or a ``description`` is left out (logged),
as is a second package of one server with the same name (§1.5). A server that stops
takes its skills out of `client:get_skills` (orphans, §5); its staged folders are kept.
User skills (§1.2, source ``user``, name = the folder's name) are the packages
``<folder>/<skill>/SKILL.md`` of the folder the Computer was given, scanned on each request.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

import attrs

from ...protocol import events
from ...protocol.errors import BadRequestError, MCPServerNotFoundError, SMCPError
from ...protocol.models import (
    DEFAULT_SKILL_FILE,
    A2CSkillRef,
    Resource,
    ResourceContents,
    StdioServerConfig,
    TextResourceContents,
)
from ...protocol.skill_name import check_skill_name, is_skill_segment, mcp_skill_name
from ..mcp.manager import ServerManager
from .channel import ResourceChannel
from .skill_archives import Download, PackageBudget, check_entries, fetch_archive
from .skill_files import SkillResource, read_front_matter, skill_resource

log = logging.getLogger(__name__)

SCHEME = "skill"
#: The staging modes of §3.
SOURCE_MODES = frozenset({"mounted", "archive", "resources"})
#: Default cap on one resource's bytes (§7 step 5: over it, 4017 too_large, nothing sent).
DEFAULT_MAX_RESOURCE_SIZE = 256 * 1024 * 1024
#: Files of a ``resources`` package read at once (the byte bound is checked between batches).
READ_BATCH = 64
#: Default most bytes of text answered inline (a2c-smcp 0.4.2's; well under any message limit).
DEFAULT_INLINE_BUDGET = 32 * 1024


@attrs.frozen
class PackageRoot:
    """A listed package root: how it is staged (``_meta``) and, in ``resources`` mode,
    the URIs of its files. Compared to notice a change of a listing."""

    meta: Mapping[str, Any]
    files: tuple[str, ...] = ()


@attrs.frozen
class StagedSkill:
    """A skill and the local package folder it is read from; `server`: the MCP server
    (bundle id) that offers it, None for the user's own."""

    ref: A2CSkillRef
    root: Path
    server: str | None = None


def package_roots(server: str, resources: Sequence[Resource]) -> dict[str, PackageRoot]:
    """The package roots among `server`'s `skill://` resources (listing order): those
    declaring a staging mode with a path, not under another such root."""
    candidates = [r for r in resources if (r.meta or {}).get("source") in SOURCE_MODES and _path_of(r.uri)]
    roots = [r for r in candidates if not any(_is_under(r.uri, other.uri) for other in candidates)]
    return {
        root.uri: PackageRoot(dict(root.meta or {}), tuple(r.uri for r in resources if _is_under(r.uri, root.uri)))
        for root in roots
    }


class SkillHome:
    """Where ``resources``-mode packages are staged: the given folder, or a private
    temporary one made on first use and removed by `close()`."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self._given = Path(folder).expanduser().resolve() if folder is not None else None
        self._made: Path | None = None
        self._closed = False
        self._lock = threading.Lock()

    def folder(self) -> Path:
        with self._lock:
            if self._closed:
                raise OSError("the Computer is closed")
            if self._given is not None:
                self._given.mkdir(mode=0o700, parents=True, exist_ok=True)
                return self._given
            if self._made is None:
                self._made = Path(tempfile.mkdtemp(prefix="smcp-skills-"))
            return self._made

    def close(self) -> None:
        with self._lock:
            made, self._made, self._closed = self._made, None, True
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


class Stager:
    def __init__(self, manager: ServerManager, home: SkillHome, timeout: float) -> None:
        self._manager = manager
        self._home = home
        self._timeout = timeout
        self._downloads_lock = threading.Lock()
        self._downloads: set[Download] = set()
        self._halted = False

    def halt(self) -> None:
        """The Computer is closing: abort the archive downloads under way, start no more."""
        with self._downloads_lock:
            self._halted = True
            downloads = list(self._downloads)
        for download in downloads:
            download.abort()

    def stage(self, server: str, uris: Sequence[str], roots: Mapping[str, Any]) -> list[StagedSkill | SMCPError]:
        """Each of `uris` (package roots of `server`) staged, or why it could not be."""
        staged: list[StagedSkill | SMCPError] = []
        for uri in uris:
            root = roots.get(uri)
            try:
                if not isinstance(root, PackageRoot):
                    raise BadRequestError("it is no longer listed as a package root")
                package_parts(uri)
                folder = self._materialize(server, uri, root)
                staged.append(StagedSkill(_mcp_ref(server, uri, root, folder), folder, server))
            except SMCPError as exc:
                staged.append(exc)
            except (OSError, ValueError) as exc:  # ValueError: a file that is not base64
                staged.append(BadRequestError(f"cannot stage it: {_why(exc)}"))
        return staged

    def _materialize(self, server: str, uri: str, root: PackageRoot) -> Path:
        mode = root.meta.get("source")
        if mode == "mounted":
            if not self._shares_disk(server):
                raise BadRequestError(
                    "the mounted mode is for stdio MCP servers only: a remote server's mount_dir names "
                    "a folder of its own machine, not of this one"
                )
            mount_dir = root.meta.get("mount_dir")
            if not isinstance(mount_dir, str) or not Path(mount_dir).is_absolute() or not Path(mount_dir).is_dir():
                raise BadRequestError(f"_meta.mount_dir must name an existing absolute folder, got {mount_dir!r:.200}")
            return Path(mount_dir)
        if mode == "resources":
            return self._write_files(server, uri, root.files)
        return self._unpack_archive(server, uri, root.meta)

    def _shares_disk(self, server: str) -> bool:
        """Whether `server` runs on this machine (a stdio child): only then is its
        ``mount_dir`` a folder the Computer may read."""
        return any(
            status.bundle_id == server and isinstance(config, StdioServerConfig)
            for config, status in self._manager.snapshot()
        )

    def _write_files(self, server: str, uri: str, files: Sequence[str]) -> Path:
        """The package written (`_stage`) under a folder named from a digest of its
        contents: a package staged again unchanged is not rewritten, a changed one goes
        to a new folder, so a reader never sees one half written. A new folder is made
        under a temporary name and renamed into place (two stagings at once: one wins)."""
        contents = self._read_files(server, uri, files)
        digest = hashlib.sha256()
        for parts, data in contents:
            digest.update(f"{'/'.join(parts)}\0{len(data)}\0".encode() + data)
        return self._stage(server, package_parts(uri)[0], digest.hexdigest(), contents)

    def _stage(self, server: str, leaf: str, digest: str, contents: Sequence[tuple[tuple[str, ...], bytes]]) -> Path:
        """`contents` written to ``<home>/mcp/<server>/<folder>/<leaf>/``, `folder` from the
        package's `digest` and `leaf` both: the same files listed under another URI (another
        leaf) stage to a folder of their own."""
        parent = self._home.folder() / "mcp" / server
        staged = parent / hashlib.sha256(f"{leaf}\0{digest}".encode()).hexdigest()[:24]
        if (staged / leaf).is_dir():
            return staged / leaf
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=".staging-", dir=parent))
        try:
            for parts, data in contents:
                target = fresh.joinpath(leaf, *parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            try:
                fresh.rename(staged)
            except OSError:
                if not (staged / leaf).is_dir():  # not another staging's win: a real failure
                    raise
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        return staged / leaf

    def _unpack_archive(self, server: str, uri: str, meta: Mapping[str, Any]) -> Path:
        download = Download(self._timeout)
        with self._downloads_lock:
            self._downloads.add(download)
            if self._halted:
                download.abort()
        try:
            digest, files = fetch_archive(meta, download)
        finally:
            with self._downloads_lock:
                self._downloads.discard(download)
        return self._stage(server, package_parts(uri)[0], digest, files)

    def _read_files(self, server: str, uri: str, files: Sequence[str]) -> list[tuple[tuple[str, ...], bytes]]:
        """Each file under the root `uri`: its path parts inside the package and bytes,
        within an archive's bounds (`PackageBudget`): too many files are refused before a
        read, too many bytes after the batch of `READ_BATCH` reads that passed the bound."""
        check_entries(len(files))
        budget = PackageBudget()
        contents = []
        for start in range(0, len(files), READ_BATCH):
            batch = files[start : start + READ_BATCH]
            for file_uri, answer in zip(batch, self._manager.read_resources(server, batch, self._timeout)):
                if isinstance(answer, SMCPError):
                    raise answer
                parts = package_parts(file_uri)[len(package_parts(uri)) :]
                if not parts:
                    raise BadRequestError(f"{file_uri:.200} names no file inside the package")
                data = b"".join(_bytes_of(item) for item in answer)
                budget.take(len(data))
                contents.append((parts, data))
        return contents


def _mcp_ref(server: str, uri: str, root: PackageRoot, folder: Path) -> A2CSkillRef:
    front = _front_matter(folder)
    version = root.meta.get("version")
    return _ref(
        front,
        name=mcp_skill_name(server, front["name"]),
        source=f"mcp:{server}",
        path=folder,
        uri=uri,
        version=None if version is None else str(version),
    )


def _front_matter(folder: Path) -> dict[str, Any]:
    """SKILL.md's front matter, with a kebab-case ``name`` and a ``description``."""
    try:
        front = read_front_matter(folder)
    except OSError:
        raise BadRequestError(f"the package has no readable {DEFAULT_SKILL_FILE}") from None
    if not isinstance(front.get("name"), str) or not is_skill_segment(front["name"]):
        raise BadRequestError(f"its {DEFAULT_SKILL_FILE} name {front.get('name')!r:.80} is not a valid skill name")
    if not isinstance(front.get("description"), str) or not front["description"]:
        raise BadRequestError(f"its {DEFAULT_SKILL_FILE} has no description")
    return front


def _ref(front: Mapping[str, Any], *, name: str, source: str, path: Path, **extra: Any) -> A2CSkillRef:
    allowed = front.get("allowed-tools", front.get("allowed_tools"))
    if allowed is not None and not isinstance(allowed, list):
        allowed = [allowed]
    tags = front.get("tags")
    return A2CSkillRef(
        name=name,
        source=source,
        path=str(path.resolve()),
        description=front["description"],
        license=_text(front.get("license")),
        compatibility=_text(front.get("compatibility")),
        allowed_tools=None if allowed is None else [str(tool) for tool in allowed],
        tags=[str(tag) for tag in tags] if isinstance(tags, list) else None,
        skill_metadata=front.get("metadata") if isinstance(front.get("metadata"), dict) else None,
        **extra,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class UserSkills:
    """The user's packages ``<folder>/<skill>/SKILL.md``, named after their folder and
    scanned on each request; a folder that is no valid package is skipped (warned once)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._warned: set[str] = set()

    def scan(self) -> list[StagedSkill]:
        try:
            children = sorted(c for c in self.folder.iterdir() if (c / DEFAULT_SKILL_FILE).is_file())
        except OSError as exc:
            self._warn(f"cannot read the folder: {_why(exc)}")
            return []
        found = []
        for child in children:
            try:
                if not is_skill_segment(child.name):
                    raise BadRequestError("its folder name is not a valid skill name")
                front = read_front_matter(child)
                if not isinstance(front.get("description"), str) or not front["description"]:
                    raise BadRequestError(f"its {DEFAULT_SKILL_FILE} has no description")
            except SMCPError as exc:
                self._warn(f"{child.name} skipped: {exc.message}")
                continue
            except OSError as exc:
                self._warn(f"{child.name} skipped: {_why(exc)}")
                continue
            found.append(StagedSkill(_ref(front, name=child.name, source="user", path=child), child))
        return found

    def _warn(self, message: str) -> None:
        """Logged once; names no host path (the folder's own name only)."""
        if message not in self._warned and len(self._warned) < 1000:
            self._warned.add(message)
            log.warning("user skills: %s", message)


class SkillRegistry:
    """The Skills: the `skill://` channel of the MCP servers' packages, staged; the user's
    packages; and what `client:get_skills` / `client:get_skill` answer of them."""

    def __init__(
        self,
        manager: ServerManager,
        home: SkillHome,
        timeout: float,
        wait: float,
        user: UserSkills | None,
        max_size: int,
    ) -> None:
        """`timeout`: per MCP request, and for the whole of an archive's download; `wait`:
        how long a reader waits for the warm-up; `max_size`: the most bytes of one resource
        (over it, 4017 too_large). Packages are staged on a warm-up lane of their own (an
        archive download must not hold up the Desktop's and the Finder's warm-up), and
        `halt` aborts the downloads under way."""
        self._stager = Stager(manager, home, timeout)
        self._user = user
        self._max_size = max_size
        self.channel: ResourceChannel[StagedSkill] = ResourceChannel(
            "skills",
            SCHEME,
            events.UPDATE_SKILLS,
            read=self._stage,
            check=lambda uri: None,
            value_of=lambda server, staged: staged,
            wait=wait,
            survey=package_roots,
            warm_lane="skills",
            on_halt=self._stager.halt,
        )

    def current(self, servers: Sequence[str]) -> list[StagedSkill]:
        """Every skill an Agent may use now, in discovery order (`servers` in configuration
        order, then the user's); of two with one name the first is kept (§1.5, logged)."""
        found: dict[str, StagedSkill] = {}
        staged = [entry.value for entry in self.channel.entries(servers).entries]
        for skill in [*staged, *(self._user.scan() if self._user is not None else ())]:
            if skill.ref.name in found:
                first = found[skill.ref.name].ref.source
                left_out = (skill.ref.name, skill.ref.source, first)
                log.error("skill %s of %s is left out: one of %s has that name already", *left_out)
                continue
            found[skill.ref.name] = skill
        return list(found.values())

    def resource(self, name: Any, rel_path: str | None, current_servers: Callable[[], Sequence[str]]) -> SkillResource:
        """Resource `rel_path` (default SKILL.md) of the skill `name`: 4016 for a name the
        lexer refuses, 4014 for one not among the current skills, 4017 for a `rel_path` it
        may not read. An MCP server's skill is readable only while that server is among
        `current_servers()`: once it stops the skill is orphaned (§5) and a blob handle for
        it no longer reads."""
        check_skill_name(name)
        skill = next((s for s in self.current(current_servers()) if s.ref.name == name), None)
        if skill is None:
            raise MCPServerNotFoundError(f"no skill named {name!r} on this Computer", details={"name": name})
        resource = skill_resource(skill.root, DEFAULT_SKILL_FILE if rel_path is None else rel_path, self._max_size)
        server = skill.server
        if server is None:
            return resource
        return resource.readable_while(lambda: server in current_servers())

    def _stage(self, server: str, uris: Sequence[str]) -> list[StagedSkill | SMCPError]:
        return self._stager.stage(server, uris, self.channel.details(server))


def _path_of(uri: str) -> str:
    """``skill://host/a/b`` -> ``a/b`` (decoded, no leading ``/``)."""
    try:
        return unquote(urlsplit(uri).path).strip("/")
    except ValueError:
        return ""


def package_parts(uri: str) -> tuple[str, ...]:
    """The decoded path components of a package URI (``skill://host/a/b`` -> ``("a",
    "b")``); `BadRequestError` for one that could name a folder other than itself once
    written to disk: empty, ``.``, ``..`` (``%2E%2E`` too), or holding a backslash or NUL."""
    parts = tuple(_path_of(uri).split("/"))
    if any(part in ("", ".", "..") or "\\" in part or "\x00" in part for part in parts):
        raise BadRequestError(f"{uri:.200} has a path component that is empty, '.' or '..'")
    return parts


def _why(exc: Exception) -> str:
    """An OS or decoding failure said without the paths it names (they are the Computer's)."""
    return str(getattr(exc, "strerror", None) or getattr(exc, "reason", None) or type(exc).__name__)


def _is_under(uri: str, root: str) -> bool:
    return uri.startswith(root.rstrip("/") + "/")


def _bytes_of(contents: ResourceContents) -> bytes:
    if isinstance(contents, TextResourceContents):
        return contents.text.encode("utf-8")
    return base64.b64decode(contents.blob)
