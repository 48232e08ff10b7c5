"""Private virtualenvs holding the official A2C-SMCP Python SDK, one per peer version.

The official SDK pins ``mcp<2`` while smcp_sync uses mcp 2.x, so the SDK never shares an
interpreter with our package: it runs in its own virtualenv, as child processes started
from the test-suite (see ``tests/interop/scripts/``). Two versions are tested side by side:
``CURRENT`` (a2c-smcp 0.4.2, protocol 0.4) and ``LEGACY`` (a2c-smcp 0.1.6, no handshake).

``official_sdk_python(version)`` returns that version's venv ``python``. Each venv is built
once and reused:

* location: ``$SMCP_OFFICIAL_VENV-<version>`` (tox sets ``SMCP_OFFICIAL_VENV`` under its
  work dir, so the four envs of a run share one build per version), else
  ``<repo>/.official-sdk-venv-<version>``;
* a marker file records what was installed; a venv whose marker matches and whose python
  can import everything the scripts need is reused as is, anything else is rebuilt;
* an exclusive ``fcntl.flock`` on ``<venv>.lock`` serialises concurrent builders
  (pytest-xdist workers, parallel tox envs);
* both SDK versions declare ``Requires-Python >=3.11``: the venv is made with the
  interpreter running the tests when it is 3.11+, otherwise (or if that build fails) with
  another 3.11+ interpreter found on the machine (``$SMCP_OFFICIAL_SDK_BASE_PYTHON``,
  ``python3.1x`` on PATH, pyenv versions). The venv is a separate process, so its Python
  need not match.

Only PyPI (through pip, with the machine's ordinary pip configuration) is needed.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = [
    "CURRENT",
    "LEGACY",
    "SDK_VERSIONS",
    "OfficialVenvError",
    "official_sdk_python",
    "requirements",
    "venv_dir",
]

CURRENT = "0.4.2"
LEGACY = "0.1.6"
SDK_VERSIONS: tuple[str, ...] = (CURRENT, LEGACY)

# What the official Server, Computer and sync Agent need to actually run, besides the SDK:
# - the cli extra: the Computer module imports prompt_toolkit at import time;
# - requests + websocket-client: python-socketio's *sync* Client (the SDK's sync Agent)
#   needs them for polling and for the websocket upgrade;
# - werkzeug + simple-websocket: the SDK's sync Server namespace on a threading
#   socketio.Server behind werkzeug's threaded WSGI server, with websocket upgrade
#   (0.4.2's server extra brings werkzeug and uvicorn, not simple-websocket);
# - uvicorn + websockets: the SDK's stock async Server under ASGI (--asgi), where HTTP
#   headers such as 0.1.x's access_token reach its auth provider;
# the Computer's socketio.AsyncClient uses aiohttp, a direct SDK dependency.
_TRANSPORT = ("requests", "websocket-client", "werkzeug", "simple-websocket", "uvicorn", "websockets")
_EXTRAS = {CURRENT: "server,cli", LEGACY: "cli"}

# Imported by the smoke check that decides whether an existing venv is usable.
_SMOKE_IMPORTS = (
    "a2c_smcp.server",
    "a2c_smcp.agent",
    "a2c_smcp.computer.computer",
    "a2c_smcp.computer.socketio.client",
    "mcp.server.fastmcp",
    "socketio",
    "requests",
    "websocket",
    "werkzeug.serving",
    "simple_websocket",
    "uvicorn",
    "websockets",
    "aiohttp",
)
_SMOKE_IMPORTS_BY_VERSION = {CURRENT: ("a2c_smcp.server.middleware",), LEGACY: ()}


def requirements(version: str) -> tuple[str, ...]:
    """The pip requirements of the venv for SDK ``version`` (one of ``SDK_VERSIONS``)."""
    if version not in _EXTRAS:
        raise ValueError(f"no interop venv for a2c-smcp {version!r}; known: {', '.join(SDK_VERSIONS)}")
    return (f"a2c-smcp[{_EXTRAS[version]}]=={version}", *_TRANSPORT)


# Each version's Requires-Python lower bound (both declare '>=3.11,<4.0').
_MIN_PYTHON = {CURRENT: (3, 11), LEGACY: (3, 11)}
_MARKER = "smcp-official-sdk.json"
_VENV_TIMEOUT = 300
_PIP_TIMEOUT = 900
_CHECK_TIMEOUT = 120
_LOCK_TIMEOUT = 1800

_REPO_ROOT = Path(__file__).resolve().parents[2]


class OfficialVenvError(RuntimeError):
    """The official SDK's virtualenv could not be built."""


def venv_dir(version: str) -> Path:
    """Where the venv of SDK ``version`` lives: ``$SMCP_OFFICIAL_VENV-<version>`` or
    ``<repo>/.official-sdk-venv-<version>``."""
    configured = os.environ.get("SMCP_OFFICIAL_VENV")
    base = Path(configured).expanduser().resolve() if configured else _REPO_ROOT / ".official-sdk-venv"
    requirements(version)  # refuses an unknown version
    return base.with_name(f"{base.name}-{version}")


def _venv_python(path: Path) -> Path:
    return path / "bin" / "python"




def _run(argv: list[str], timeout: float, what: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    env.pop("PYTHONPATH", None)  # never leak our own packages into the other venv
    env.pop("PYTHONHOME", None)
    try:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise OfficialVenvError(f"{what} timed out after {timeout}s: {' '.join(argv)}") from exc


def _is_usable(path: Path, version: str) -> bool:
    python = _venv_python(path)
    marker = path / _MARKER
    if not python.exists() or not marker.exists():
        return False
    try:
        if json.loads(marker.read_text(encoding="utf-8")).get("requirements") != list(requirements(version)):
            return False
    except (OSError, ValueError):
        return False
    code = (
        "import importlib, importlib.metadata as m\n"
        f"[importlib.import_module(n) for n in {[*_SMOKE_IMPORTS, *_SMOKE_IMPORTS_BY_VERSION[version]]!r}]\n"
        f"assert m.version('a2c-smcp') == {version!r}, m.version('a2c-smcp')\n"
    )
    proc = _run([str(python), "-c", code], _CHECK_TIMEOUT, "smoke check")
    return proc.returncode == 0


def _python_version(executable: str) -> tuple[int, int] | None:
    try:
        proc = subprocess.run(
            [executable, "-c", "import sys, venv, ensurepip; print(sys.version_info[0], sys.version_info[1])"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        major, minor = (int(x) for x in proc.stdout.split())
    except ValueError:
        return None
    return major, minor


def _candidate_interpreters(minimum: tuple[int, int]) -> list[str]:
    """Interpreters of at least ``minimum`` able to make a venv, best first, without duplicates."""
    raw: list[str] = []
    if os.environ.get("SMCP_OFFICIAL_SDK_BASE_PYTHON"):
        raw.append(os.environ["SMCP_OFFICIAL_SDK_BASE_PYTHON"])
    raw.append(sys.executable)
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for pattern in ("3.11.*", "3.12.*", "3.13.*"):
        raw.extend(sorted(glob.glob(os.path.join(pyenv_root, "versions", pattern, "bin", "python"))))
    for name in ("python3.11", "python3.12", "python3.13", "python3"):
        found = shutil.which(name)
        if found:  # may be a pyenv shim: it is tried, and skipped if it does not run
            raw.append(found)

    seen: set[str] = set()
    result: list[str] = []
    for exe in raw:
        key = os.path.realpath(exe)
        if key in seen:
            continue
        seen.add(key)
        version = _python_version(exe)
        if version is not None and version >= minimum:
            result.append(exe)
    return result


def _build(path: Path, version: str, base_python: str) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = _run([base_python, "-m", "venv", str(path)], _VENV_TIMEOUT, "venv creation")
    if proc.returncode != 0:
        raise OfficialVenvError(f"'{base_python} -m venv' failed:\n{proc.stdout[-4000:]}")
    python = str(_venv_python(path))
    proc = _run(
        [python, "-m", "pip", "install", "--quiet", *requirements(version)],
        _PIP_TIMEOUT,
        "pip install",
    )
    if proc.returncode != 0:
        raise OfficialVenvError(f"pip install with {base_python} failed:\n{proc.stdout[-4000:]}")
    (path / _MARKER).write_text(
        json.dumps({"requirements": list(requirements(version)), "base_python": base_python, "built_at": time.time()}, indent=2),
        encoding="utf-8",
    )
    if not _is_usable(path, version):
        raise OfficialVenvError(f"venv built with {base_python} fails its smoke check")


def official_sdk_python(version: str) -> Path:
    """Return the python of the venv with a2c-smcp ``version`` installed, building it if needed."""
    path = venv_dir(version)
    if _is_usable(path, version):
        return _venv_python(path)

    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.parent / (path.name + ".lock")
    with open(lock_path, "a+") as lock_file:
        deadline = time.monotonic() + _LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OfficialVenvError(f"timed out waiting for the lock {lock_path}") from None
                time.sleep(0.5)
        try:
            if _is_usable(path, version):  # another process built it while we waited
                return _venv_python(path)
            minimum = ".".join(map(str, _MIN_PYTHON[version]))
            candidates = _candidate_interpreters(_MIN_PYTHON[version])
            if not candidates:
                raise OfficialVenvError(
                    f"a2c-smcp {version} needs Python >= {minimum} and none was found; "
                    f"set SMCP_OFFICIAL_SDK_BASE_PYTHON to a {minimum}+ interpreter"
                )
            errors: list[str] = []
            for base in candidates:
                try:
                    _build(path, version, base)
                    return _venv_python(path)
                except OfficialVenvError as exc:
                    errors.append(str(exc))
            shutil.rmtree(path, ignore_errors=True)
            raise OfficialVenvError(f"could not build the a2c-smcp {version} venv:\n\n" + "\n\n".join(errors))
        finally:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)


if __name__ == "__main__":  # pragma: no cover - manual use: python tests/interop/venv.py [VERSION...]
    for wanted in sys.argv[1:] or SDK_VERSIONS:
        started = time.monotonic()
        print(official_sdk_python(wanted))
        print(f"a2c-smcp {wanted} ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
