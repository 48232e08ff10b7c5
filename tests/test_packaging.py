"""What `pip install .` and an sdist get: built with setuptools' own PEP 517 hooks from a
copy of the sources, as pip or `python -m build` would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(180), pytest.mark.once]

REPO = Path(__file__).resolve().parents[1]
FILES = ["setup.cfg", "setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "tox.ini"]
FOLDERS = ["smcp_sync", "tests", "examples", "benchmarks"]
#: The sdist by setuptools' hook here (no `wheel` package needed); the wheel by pip in
#: an isolated build with the setuptools pyproject.toml asks for, verbose for its warnings.
SDIST = "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"
WHEEL = [sys.executable, "-m", "pip", "wheel", "--use-pep517", "--no-deps", "--verbose", "--wheel-dir", "dist", "."]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    source = tmp_path_factory.mktemp("source")
    for name in FILES:
        shutil.copy(REPO / name, source / name)
    for name in FOLDERS:
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    sdist = subprocess.run([sys.executable, "-c", SDIST], cwd=source, capture_output=True, text=True, timeout=60)
    assert sdist.returncode == 0, sdist.stderr
    wheel = subprocess.run(WHEEL, cwd=source, capture_output=True, text=True, timeout=110)
    assert wheel.returncode == 0, wheel.stderr
    [built_wheel] = (source / "dist").glob("*.whl")
    return source / "dist" / sdist.stdout.split()[-1], built_wheel, sdist.stdout + sdist.stderr + wheel.stdout + wheel.stderr


def test_setuptools_has_nothing_to_warn_about_package_data(built: tuple[Path, Path, str]) -> None:
    _, wheel, log = built
    assert "absent from the `packages` configuration" not in log
    assert "License classifiers are deprecated" not in log
    listed = zipfile.ZipFile(wheel).namelist()
    assert "smcp_sync/demo/documents/images/bridge-threads.svg" in listed and "smcp_sync/py.typed" in listed
    assert not [name for name in listed if name.startswith(("tests/", "examples/"))]


def test_the_sdist_carries_the_whole_test_suite(built: tuple[Path, Path, str]) -> None:
    sdist, _, _ = built
    with tarfile.open(sdist) as archive:
        root = archive.getnames()[0].split("/")[0]
        carried = {name.removeprefix(f"{root}/") for name in archive.getnames()}
    suite = {str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    suite = {name for name in suite if not any(part.startswith(".") for part in Path(name).parts)}
    assert suite - carried == set()
    assert {"tests/conftest.py", "tox.ini", "MANIFEST.in"} <= carried
    assert not [name for name in carried if name.endswith(".pyc")]


@pytest.mark.timeout(600)
def test_the_gevent_extra_installs_what_the_gevent_server_imports(built: tuple[Path, Path, str], tmp_path: Path) -> None:
    """README's `pip install '.[gevent]'`, then `smcp-sync server --mode gevent`, in a fresh
    venv (issue 36: it lacked `packaging`, which gunicorn's gevent worker imports). The
    wheel built above stands for `.`: the same metadata, without a second build. pip's
    cache is used; nothing is installed with --no-deps, since what the extra pulls in is
    the point."""
    from smcp_sync import Agent
    from smcp_sync.connection.session import ReconnectPolicy

    _, wheel, _ = built
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", f"{wheel}[gevent]"],
                             capture_output=True, text=True, timeout=400)  # fmt: skip
    assert install.returncode == 0, install.stderr
    server = subprocess.Popen([venv / "bin" / "smcp-sync", "server", "--port", "0", "--mode", "gevent"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = server.stdout.readline()  # the ready line, or "" when it exits first (bounded by the test's timeout)
        assert line.startswith("smcp-sync server listening on http://127.0.0.1:"), line + server.stderr.read()
        with Agent("packaging-check", reconnect=ReconnectPolicy(enabled=False)) as agent:
            agent.connect(line.split()[-1], timeout=10)
            agent.join_office("o1", timeout=10)
            assert [(s.name, s.role) for s in agent.list_room(timeout=10)] == [("packaging-check", "agent")]
    finally:
        server.terminate()
        code = server.wait(30)
        server.stdout.close()
        server.stderr.close()
    assert code == 0
