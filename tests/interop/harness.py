"""Drive the official SDK scripts (``tests/interop/scripts/``) as child processes.

Every script prints one JSON object per line on stdout. ``JsonLineProcess`` reads them on a
background thread, keeps them in order and lets a test wait for one that matches::

    server = start_official_server(python)                # waits for {"event":"listening"}
    computer = start_official_computer(python, server.url, "office", "c1", echo_mcp_config(python))
    events = run_official_agent(python, server.url, "office", "a1", [{"op": "list_room"}])
    results = agent_results(events)

``python`` is ``interop.venv.official_sdk_python(version)``; ``OfficialPeer`` pairs it with
its version and what differs by version on the wire (tool names, the key's field). Children run in their own process
group; ``stop()`` closes stdin, sends SIGTERM, waits, then SIGKILLs the group (so MCP
grandchildren go too). All helpers take timeouts; a failed wait raises ``InteropTimeout``
with the child's recent stderr.

Tests import this module as ``interop.harness`` (``tests/`` is on ``sys.path``: pytest puts
the directory of the top-level ``tests/conftest.py`` there) and take the fixtures of that
conftest: ``official_python`` (0.1.6), ``official_peer`` (each version in turn), ``spawn``
(adopts children into a ``Children``) and ``official_server``.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "SCRIPTS",
    "Children",
    "InteropTimeout",
    "JsonLineProcess",
    "OfficialPeer",
    "agent_results",
    "by_op",
    "echo_mcp_config",
    "matches",
    "run_official_agent",
    "start_official_agent",
    "start_official_computer",
    "start_official_server",
]

SCRIPTS = Path(__file__).resolve().parent / "scripts"

Match = Mapping[str, Any] | Callable[[dict], bool] | str


class InteropTimeout(AssertionError):
    """A child did not print what was expected in time (or exited first)."""


def matches(event: dict, match: Match) -> bool:
    """``match`` is an event name, a callable, or a dict whose items must all be in ``event``
    (nested dicts match recursively as subsets)."""
    if isinstance(match, str):
        return event.get("event") == match
    if callable(match):
        return bool(match(event))
    return _subset(match, event)


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and _subset(v, actual[k]) for k, v in expected.items())
    return expected == actual


def _child_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the official venv must not see our packages
    env.pop("PYTHONHOME", None)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("A2C_SMCP_LOG_LEVEL", "warning")
    if extra:
        env.update(extra)
    return env


class JsonLineProcess:
    """A child process speaking JSON lines on stdout; stderr kept as a bounded tail."""

    def __init__(
        self,
        argv: list[str],
        *,
        name: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike | None = None,
        stderr_lines: int = 400,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.events: list[dict] = []
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._cond = threading.Condition()
        self._stdin_lock = threading.Lock()
        self._eof = False
        self.url: str | None = None  # set by start_official_server
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            env=_child_env(env),
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, name=f"{name}-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{name}-stderr", daemon=True),
        ]
        for thread in self._readers:
            thread.start()

    # -- reading ---------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            try:
                event = json.loads(line)
                if not isinstance(event, dict):
                    event = {"event": "raw", "line": line}
            except ValueError:
                event = {"event": "raw", "line": line}
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_tail.append(raw.rstrip("\n"))

    # -- queries ---------------------------------------------------------------------------
    def snapshot(self) -> list[dict]:
        with self._cond:
            return list(self.events)

    def find_all(self, match: Match) -> list[dict]:
        return [e for e in self.snapshot() if matches(e, match)]

    def wait_for(self, match: Match, timeout: float = 30.0, *, after: int = 0) -> dict:
        """First event at index >= ``after`` that matches; raise ``InteropTimeout`` otherwise."""
        index = self.wait_for_index(match, timeout, after=after)
        with self._cond:
            return self.events[index]

    def wait_for_index(self, match: Match, timeout: float = 30.0, *, after: int = 0) -> int:
        deadline = time.monotonic() + timeout
        position = after
        with self._cond:
            while True:
                while position < len(self.events):
                    if matches(self.events[position], match):
                        return position
                    position += 1
                if self._eof:
                    raise InteropTimeout(self._describe(f"exited (rc={self.proc.poll()}) before printing {match!r}"))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise InteropTimeout(self._describe(f"did not print {match!r} within {timeout}s"))
                self._cond.wait(remaining)

    def wait_for_count(self, match: Match, count: int, timeout: float = 30.0, *, after: int = 0) -> list[dict]:
        """Wait until ``count`` events at index >= ``after`` match; return them (in order)."""
        deadline = time.monotonic() + timeout
        found: list[dict] = []
        position = after
        while len(found) < count:
            index = self.wait_for_index(match, max(0.0, deadline - time.monotonic()), after=position)
            with self._cond:
                found.append(self.events[index])
            position = index + 1
        return found

    def mark(self) -> int:
        """Index to pass as ``after=`` so later waits ignore what was printed so far."""
        with self._cond:
            return len(self.events)

    def _describe(self, what: str) -> str:
        tail = "\n".join(list(self.stderr_tail)[-60:])
        last = "\n".join(json.dumps(e)[:400] for e in self.snapshot()[-15:])
        return f"{self.name} {what}\n--- last stdout events ---\n{last}\n--- stderr tail ---\n{tail}"

    # -- writing / lifetime ----------------------------------------------------------------
    def send(self, obj: Mapping[str, Any]) -> None:
        with self._stdin_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()

    def close_stdin(self) -> None:
        with self._stdin_lock:
            try:
                if self.proc.stdin and not self.proc.stdin.closed:
                    self.proc.stdin.close()
            except OSError:
                pass

    def wait_exit(self, timeout: float = 30.0) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise InteropTimeout(self._describe(f"still running after {timeout}s")) from exc
        for thread in self._readers:
            thread.join(5)
        return rc

    def stop(self, timeout: float = 15.0, *, grace: float = 5.0) -> int | None:
        """Close stdin (the scripts exit on EOF) and wait up to ``grace`` s; then SIGTERM and
        wait up to ``timeout`` s; finally SIGKILL the whole process group."""
        self.close_stdin()
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self._kill_group()
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - should not happen after SIGKILL
            rc = None
        for thread in self._readers:
            thread.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        return rc

    def _kill_group(self) -> None:
        # The child leads its own session/process group (start_new_session=True); what is
        # left in that group (e.g. MCP stdio servers it spawned) goes with it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> JsonLineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Children:
    """The children one test (or one benchmark section) started, stopped together.

    ``stop_all()`` first closes every child's stdin (the scripts exit on EOF, so all begin
    to wind down at once), then stops each one, the last started first."""

    def __init__(self) -> None:
        self._started: list[JsonLineProcess] = []

    def adopt(self, child: JsonLineProcess) -> JsonLineProcess:
        self._started.append(child)
        return child

    def stop_all(self, **stop_options: float) -> None:
        for child in self._started:
            child.close_stdin()
        for child in reversed(self._started):
            child.stop(**stop_options)


# -- the official SDK roles ----------------------------------------------------------------


class OfficialPeer(NamedTuple):
    """One official SDK version and the python of its venv, with what differs on the wire."""

    version: str
    python: Path

    @property
    def handshake(self) -> bool:
        """0.4+: sends ``a2c_version``, its Server gates on it, flat errors, BundleID names."""
        return tuple(int(x) for x in self.version.split(".")[:2]) >= (0, 4)

    def tool(self, server: str, tool: str) -> str:
        """The name its Computer exposes ``tool`` of MCP server ``server`` under (no explicit
        bundle_id: 0.4+ derives it from the server name)."""
        return f"{server}__{tool}" if self.handshake else tool

    @property
    def auth_via_own_server(self) -> str:
        """How its clients present the key to its own Server (``official_server.py``): the
        SDK default for 0.4+; the auth dict for 0.1.x, whose default HTTP header
        ``access_token`` werkzeug drops (an underscore in the name)."""
        return "sdk" if self.handshake else "auth"

    def stock_credentials(self, key: str) -> dict[str, dict[str, str]]:
        """``auth=`` / ``headers=`` for our Agent and Computer that present ``key`` where its
        stock Server's default provider reads it (0.4+: ``auth.token``; 0.1.x: the HTTP
        header ``access_token``, which only reaches it under ASGI: ``asgi=True``)."""
        return {"auth": {"token": key}} if self.handshake else {"headers": {"access_token": key}}

    def server_auth(self, key: str) -> dict[str, str]:
        """The Socket.IO auth dict its Server (``official_server.py``) accepts by default."""
        return {"token": key} if self.handshake else {"access_token": key}


def _client_argv(
    python: str | os.PathLike,
    script: str,
    url: str,
    office: str,
    name: str,
    api_key: str,
    auth_via: str | None,
    transports: Iterable[str] | None,
) -> list[str]:
    """The command line a client script (Agent or Computer) starts from: where, who, which key."""
    argv = [str(python), str(SCRIPTS / script), "--url", url, "--office", office, "--name", name, "--api-key", api_key]
    if auth_via:
        argv += ["--auth-via", auth_via]
    if transports:
        argv += ["--transports", ",".join(transports)]
    return argv


def start_official_server(
    python: str | os.PathLike,
    *,
    api_key: str = "test-key",
    host: str = "127.0.0.1",
    trace: bool = True,
    version_gate: bool = True,
    gate_version: str | None = None,
    asgi: bool = False,
    timeout: float = 60.0,
) -> JsonLineProcess:
    """Start ``official_server.py``; returns once it listens. ``proc.url`` is its base URL.
    ``version_gate=False`` leaves out 0.4.x's version middleware; ``gate_version`` makes it
    speak another protocol version than the SDK's; ``asgi`` runs its stock async Server under
    uvicorn with its stock auth (see the script)."""
    argv = [str(python), str(SCRIPTS / "official_server.py"), "--host", host, "--port", "0", "--api-key", api_key]
    if not trace:
        argv.append("--no-trace")
    if not version_gate:
        argv.append("--no-version-gate")
    if gate_version:
        argv += ["--gate-version", gate_version]
    if asgi:
        argv.append("--asgi")
    proc = JsonLineProcess(argv, name="official-server", cwd=SCRIPTS)
    try:
        listening = proc.wait_for("listening", timeout)
    except BaseException:
        proc.stop()
        raise
    proc.url = listening["url"]
    return proc


def echo_mcp_config(python: str | os.PathLike, *, name: str = "echo", host_id: str = "echo.test", auto_apply: bool = True) -> dict:
    """An SDK-format stdio config running ``echo_mcp_server.py`` with ``python`` (mcp 1.x)."""
    config: dict[str, Any] = {
        "name": name,
        "type": "stdio",
        "server_parameters": {
            "command": str(python),
            "args": [str(SCRIPTS / "echo_mcp_server.py"), "--host-id", host_id],
            "env": None,
            "cwd": None,
            "encoding": "utf-8",
            "encoding_error_handler": "strict",
        },
        "disabled": False,
        "forbidden_tools": [],
        "tool_meta": {},
    }
    if auto_apply:
        config["default_tool_meta"] = {"auto_apply": True}
    return config


def start_official_computer(
    python: str | os.PathLike,
    url: str,
    office: str,
    name: str,
    mcp_config: Any,
    *,
    api_key: str = "test-key",
    auth_via: str | None = None,
    transports: Iterable[str] | None = None,
    confirm: str | None = None,
    join: bool = True,
    wait: str | None = "auto",
    timeout: float = 60.0,
    settings: str | os.PathLike | None = None,
) -> JsonLineProcess:
    """Start ``official_computer.py``. ``wait="auto"`` waits for ``joined`` (or ``connected``
    with ``join=False``); pass ``wait=None`` to return at once, or an event name.
    ``settings``: a settings.json for its flag scope (0.4.x; e.g. ``landingRoot``)."""
    config = mcp_config if isinstance(mcp_config, str) else json.dumps(mcp_config)
    argv = _client_argv(python, "official_computer.py", url, office, name, api_key, auth_via, transports)
    argv += ["--mcp-config", config]
    if confirm:
        argv += ["--confirm", confirm]
    if not join:
        argv.append("--no-join")
    if settings is not None:
        argv += ["--settings", str(settings)]
    proc = JsonLineProcess(argv, name=f"official-computer[{name}]", cwd=SCRIPTS)
    if wait == "auto":
        wait = "joined" if join else "connected"
    if wait:
        try:
            proc.wait_for(wait, timeout)
        except BaseException:
            proc.stop()
            raise
    return proc


def start_official_agent(
    python: str | os.PathLike,
    url: str,
    office: str,
    name: str,
    steps: list[dict],
    *,
    api_key: str = "test-key",
    auth_via: str | None = None,
    transports: Iterable[str] | None = None,
    join: bool = True,
    join_mode: str | None = None,
    linger: float = 0.0,
    claim_version: str | None = None,
) -> JsonLineProcess:
    """Start ``official_agent.py`` with ``steps``; it exits by itself after the steps.
    ``claim_version`` makes a 0.4.x Agent announce that protocol version instead of its own."""
    argv = _client_argv(python, "official_agent.py", url, office, name, api_key, auth_via, transports)
    argv += ["--linger", str(linger)]
    if claim_version:
        argv += ["--claim-version", claim_version]
    if not join:
        argv.append("--no-join")
    if join_mode:
        argv += ["--join-mode", join_mode]
    argv.append(json.dumps(steps))
    return JsonLineProcess(argv, name=f"official-agent[{name}]", cwd=SCRIPTS)


def run_official_agent(python: str | os.PathLike, url: str, office: str, name: str, steps: list[dict], *, timeout: float = 90.0, **kwargs: Any) -> list[dict]:
    """Run ``official_agent.py`` to completion; return all its events."""
    proc = start_official_agent(python, url, office, name, steps, **kwargs)
    try:
        proc.wait_for(lambda e: e.get("event") in ("exit", "connect_failed"), timeout)
        proc.wait_exit(30)
    finally:
        proc.stop()
    return proc.snapshot()


def agent_results(events: list[dict]) -> list[dict]:
    """The ``result`` lines of an agent run, in step order (the implicit join is index 0)."""
    return [e for e in events if e.get("event") == "result"]


def by_op(results: list[dict], op: str) -> list[dict]:
    """The results (see ``agent_results``) of the steps whose op is ``op``, in step order."""
    return [r for r in results if r["op"] == op]
