"""Shared fixtures: leak checks for threads and child processes, and the official SDK.

Use `no_leaks` in any test that starts threads or processes: it fails the test when,
a few seconds after the test body, a thread or child process started by it still runs.

The interop fixtures (`official_python`, `official_peer`, `spawn`, `official_server`) import the harness of
`tests/interop` only when a test asks for them, so the other tests never load it. Test
modules import that harness as `interop.harness`: pytest's default ("prepend") import mode
puts this file's directory, `tests/`, on `sys.path`, under `pytest` and `python -m pytest`
alike.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

import psutil
import pytest

from interop.venv import SDK_VERSIONS  # standard library only: the versions to test against

if TYPE_CHECKING:
    from interop.harness import JsonLineProcess, OfficialPeer

    Spawn = Callable[[JsonLineProcess], JsonLineProcess]

LEAK_GRACE_SECONDS = 8.0
#: Switches for what tox runs in some environments only (tox.ini says which):
#: `SMCP_INTEROP=skip` skips the official-SDK interop tests (the SDK's side is the same in
#: all four); `SMCP_ONCE=skip` the tests marked `once`: checks of the repository's tooling
#: that do not depend on the interpreter (the benchmark scripts, the sdist and wheel, mypy
#: with setup.cfg's fixed `python_version`) and the full counts of stress tests whose
#: smaller counts run everywhere; `SMCP_BRACKETS` and `SMCP_EDGES` the suites of their
#: marks (`BRACKET_SUITES`, `EDGE_SUITES`): `skip` skips them all, the name of a share
#: runs that share alone (but for the other shares' `once` tests, which run wherever
#: SMCP_ONCE lets them). `SMCP_CONFORMANCE=skip` skips the MCP conformance suite's
#: scenarios (`conformance`, tests/conformance: Node.js and an npm package, the same on
#: every interpreter; `run` makes a missing Node a failure, not a skip). Any other value
#: runs them. Interop tests are placed by SMCP_INTEROP alone: it runs them in one
#: environment already, `once` or not, and the path-based marks leave them out.
SKIP_SWITCHES = {
    "interop": "SMCP_INTEROP", "once": "SMCP_ONCE", "edges": "SMCP_EDGES", "brackets": "SMCP_BRACKETS",
    "conformance": "SMCP_CONFORMANCE",
}  # fmt: skip
#: Marked `edges` (paths under tests/), in two shares of the suites that drive whole
#: processes: what must hold under faults and load — hostile and broken clients, killed
#: processes, MCP server supervision, the test MCP servers' crash and cancel paths, nodes
#: behind a failing Redis, and the examples (`oldest`); what a user runs and sees — our
#: CLI and the Computer's, the demo, the context channels end to end, the hosts
#: (`newest`). tox runs each share once, on the oldest or the newest interpreter (and
#: `lowest` what its paths hold of them).
EDGE_SUITES = {
    "oldest": (
        "reliability/", "computer/mcp/test_supervision.py", "test_mcp_servers.py", "examples/",
        "scale_out/test_faults.py", "scale_out/test_failover.py", "scale_out/test_stall_routing.py",
        "scale_out/test_late_answers.py", "scale_out/test_sentinel.py", "scale_out/test_recovery_at_size.py",
    ),
    "newest": (
        "cli/", "context_end_to_end/", "computer/test_cli.py", "computer/config/test_vrl.py", "hosts/",
        "relay/test_hosts.py",
    ),
}  # fmt: skip
#: Marked `brackets` (paths under tests/), in two shares of the suites that start MCP
#: server children, Computers, Server processes or redis-servers test after test: the
#: Computer (`computer`); the Server and its CLI, scale-out, the Agent, Skills, blobs,
#: the Agent relay and the documentation's code blocks (`others`). tox runs each share
#: once, beside the edges; every interpreter runs the in-process core (protocol, context,
#: the connection, thread primitives, the house checks), and `lowest` its paths.
BRACKET_SUITES = {
    "computer": ("computer/",),
    "others": (
        "server/", "test_server_extra.py", "scale_out/", "agent/", "skills/", "blobs/", "relay/",
        "test_readme_blocks.py",
    ),
}  # fmt: skip
#: The suites of each mark that is shared out by path; a path two marks name (an edges
#: suite inside a brackets one, e.g. scale_out/test_faults.py) takes the first mark.
PATH_SHARES = {"edges": EDGE_SUITES, "brackets": BRACKET_SUITES}
#: Marked `conformance` (paths under tests/): the MCP conformance suite's client scenarios.
CONFORMANCE_SUITE = "conformance/"
TESTS = Path(__file__).resolve().parent


#: Tests skipped by each switch in this session, by mark (the summary line says so).
_SKIPPED_BY_SHARE: Counter[str] = Counter()


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a user's terminal sends it: a shell's background job, and some of tox's
    parallel environments, start pytest with SIGINT ignored, which every child inherits
    (Python then installs no KeyboardInterrupt for it), and the tests that interrupt a
    CLI child, a kernel or this process would wait out their timeouts."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def sigint_as_found() -> Iterator[None]:
    """Each test leaves SIGINT's handler as it found it: a python-socketio or engineio
    client made in the main thread without handle_sigint=False installs one of its own
    for the rest of the process (it disconnects every client first), and a later test
    that interrupts this process would wait on it."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is not handler and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        _mark_by_path(item)
        reason = _skip_reason(item)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
            _SKIPPED_BY_SHARE[next(m for m, s in SKIP_SWITCHES.items() if reason.startswith(f"{s}="))] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under tox, one line before pytest's own summary: which shares this environment ran
    and which it skipped, with how many tests (.ci/run prints it for each environment)."""
    line = share_summary(_SKIPPED_BY_SHARE, os.environ)
    if line is not None:
        terminalreporter.write_line(line)


def share_summary(skipped: Mapping[str, int], environ: Mapping[str, str]) -> str | None:
    """"tox shares (tox.ini): ran ...; skipped ..." for the switches set in `environ`
    (None when none is: every test runs), `skipped` counting the tests each one skipped."""
    if not any(switch in environ for switch in SKIP_SWITCHES.values()):
        return None
    ran, left = ["the core"], []
    for marker, switch in SKIP_SWITCHES.items():
        value = environ.get(switch)
        number = skipped.get(marker, 0)
        count = f"{switch}={value}: {number} test{'' if number == 1 else 's'}"
        if value == "skip":
            left.append(f"{marker} ({count})")
        elif value in PATH_SHARES.get(marker, {}):
            other = " and ".join(repr(share) for share in PATH_SHARES[marker] if share != value)
            ran.append(f"the {value!r} share of {marker}")
            left.append(f"the {other} share of {marker} ({count})")
        else:
            ran.append(marker)
    return f"tox shares (tox.ini): ran {', '.join(ran)}; skipped {', '.join(left) or 'nothing'}"


def _mark_by_path(item: pytest.Item) -> None:
    path = Path(str(item.path)).resolve()
    if "interop" in item.keywords or not path.is_relative_to(TESTS):
        return
    where = path.relative_to(TESTS).as_posix()
    for marker, shares in PATH_SHARES.items():  # the first that names the path: edges before brackets
        for share, suites in shares.items():
            if where.startswith(suites):
                item.add_marker(getattr(pytest.mark, marker)(share))
                return
    if where.startswith(CONFORMANCE_SUITE):
        item.add_marker(pytest.mark.conformance)


def _skip_reason(item: pytest.Item) -> str | None:
    for marker, switch in SKIP_SWITCHES.items():
        found, value = item.get_closest_marker(marker), os.environ.get(switch)
        if found is None or (marker == "once" and "interop" in item.keywords):
            continue
        if value == "skip":
            return f"{switch}=skip: tests marked {marker} run in some tox envs only (tox.ini)"
        if value in PATH_SHARES.get(marker, {}) and found.args != (value,) and "once" not in item.keywords:
            return f"{switch}={value}: this environment runs the {value!r} share of the {marker} suites (tox.ini)"
    return None


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}


@pytest.fixture
def no_leaks():
    threads_before, children_before = _threads(), _children()
    yield
    assert_nothing_left(threads_before, children_before)


@pytest.fixture
def every_log_record() -> Iterator[list[str]]:
    """Every log record of the process from DEBUG up, as a handler under the root logger
    formats it (traceback included): what a test greps for secrets."""
    kept: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(self.format(record))

    handler = Keep(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield kept
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="module")
def no_leaks_in_module():
    """`no_leaks` for a module's shared objects (a Computer its tests only ask): checked
    once they are closed, since their thread pools may grow and park workers between the
    tests (a fixture that depends on this one is torn down before it)."""
    threads_before, children_before = _threads(), _children()
    yield
    assert_nothing_left(threads_before, children_before)


def assert_nothing_left(threads_before: set[threading.Thread], children_before: set[int]) -> None:
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while True:
        new_threads = _threads() - threads_before
        new_children = _children() - children_before
        if not new_threads and not new_children:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    names = sorted(t.name for t in new_threads)
    pytest.fail(f"leaked threads {names} and child processes {sorted(new_children)}")


@pytest.fixture(scope="session")
def official_python() -> Path:
    """The python of the official SDK 0.1.6's virtualenv, built on first use (about a
    minute) and reused. Ask for it before `no_leaks`, so that a build does not count as a leak."""
    from interop.venv import LEGACY, official_sdk_python

    return official_sdk_python(LEGACY)


@pytest.fixture(scope="session", params=SDK_VERSIONS, ids=lambda version: f"sdk{version}")
def official_peer(request: pytest.FixtureRequest) -> OfficialPeer:
    """Each official SDK version in turn (0.4.2, 0.1.6), its venv built on first use; a
    test or module fixture asking for it runs once per version."""
    from interop.harness import OfficialPeer
    from interop.venv import official_sdk_python

    return OfficialPeer(request.param, official_sdk_python(request.param))


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """`spawn(child)` -> child: a harness `JsonLineProcess`, stopped after the test with all
    the others the test started (its process group killed if need be)."""
    from interop.harness import Children

    children = Children()
    yield children.adopt
    children.stop_all()


@pytest.fixture
def official_server(official_python: Path, no_leaks: None, spawn: Spawn) -> JsonLineProcess:
    """The official SDK's Server (traced, key ``test-key``), listening on a loopback port: ``.url``."""
    from interop.harness import start_official_server

    return spawn(start_official_server(official_python))
