"""Real MCP servers for tests, launched as child processes, and helpers to run them.

Why child processes: the Computer under test spawns and supervises MCP servers; only a
real process exercises pipes, stderr draining, crashes and cancellation for real.

* ``TOOL_SERVER`` / ``RESOURCE_SERVER``: script paths (see their module docstrings for
  the command line, tools and notifications).
* ``stdio_command(script, *args)``: ``[sys.executable, script, *args]``.
* ``start_http_server(script, *args)``: start it with an HTTP transport (``args`` must
  contain ``--transport sse`` or ``--transport streamable``), wait for its ``PORT=``
  line (bounded) and return ``(Popen, url)``; url ends in ``/sse`` or ``/mcp``.
* ``stop(proc)``: terminate, wait (bounded), kill if needed.
* ``http_server(script, *args)``: the same as a context manager yielding the url.
* ``write_state(path, resources, templates=None)``: atomically write a resource_server
  state file.
* ``tool_server_config(env=None)``: ``TOOL_SERVER`` as a Computer's stdio server
  ``tools``, every tool run unasked; ``env`` its SMCP_TEST_* logs.
* ``logged_lines(path, count=1)``: the lines a server logged to ``path`` (another
  process's file), once there are ``count`` of them or after a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import IO, Any

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL_SERVER = os.path.join(HERE, "tool_server.py")
RESOURCE_SERVER = os.path.join(HERE, "resource_server.py")

URL_PATHS = {"sse": "/sse", "streamable": "/mcp"}


def tool_server_config(env: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "tools",
        "type": "stdio",
        "server_parameters": {
            "command": sys.executable, "args": [TOOL_SERVER], "env": {k: str(v) for k, v in (env or {}).items()},
        },
        "default_tool_meta": {"auto_apply": True},
    }  # fmt: skip


def logged_lines(path: str | os.PathLike[str], count: int = 1, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = Path(path).read_text(encoding="utf-8").splitlines() if os.path.exists(path) else []
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)  # a file written by another process: nothing to wait on but the file


def stdio_command(script: str, *args: str) -> list[str]:
    return [sys.executable, script, *args]


def start_http_server(
    script: str,
    *args: str,
    env: dict[str, str] | None = None,
    stderr: int | IO[Any] | None = None,
    timeout: float = 20.0,
) -> tuple[subprocess.Popen[str], str]:
    """Launch an HTTP-transport server; return ``(process, url)`` once it listens.

    ``env`` is merged over ``os.environ``.  ``stderr`` defaults to the parent's stderr
    (pass a file or ``subprocess.DEVNULL`` to keep noisy servers quiet).  The child's
    stdout is drained by a daemon thread after the ``PORT=`` line, so it never blocks.
    Raises ``RuntimeError`` (after stopping the child) if no port arrives in time.
    """
    transport = _option(args, "--transport")
    if transport not in URL_PATHS:
        raise ValueError("start_http_server needs --transport sse or --transport streamable")
    if _option(args, "--port") is None:
        args = (*args, "--port", "0")
    proc = subprocess.Popen(
        stdio_command(script, *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, **(env or {})},
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    try:
        while True:
            line = lines.get(timeout=timeout)
            if line is None:
                raise RuntimeError(f"{script} exited with {proc.wait(timeout=5)} before reporting its port")
            if line.startswith("PORT="):
                port = int(line.strip().split("=", 1)[1])
                return proc, f"http://127.0.0.1:{port}{URL_PATHS[transport]}"
    except queue.Empty:
        stop(proc)
        raise RuntimeError(f"{script} did not report its port within {timeout}s") from None
    except BaseException:
        stop(proc)
        raise


def stop(proc: subprocess.Popen[Any], timeout: float = 5.0) -> int | None:
    """Terminate ``proc`` and wait for it (kill after ``timeout``); return its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
    return proc.returncode


@contextlib.contextmanager
def http_server(script: str, *args: str, **kwargs: Any) -> Iterator[str]:
    proc, url = start_http_server(script, *args, **kwargs)
    try:
        yield url
    finally:
        stop(proc)


def write_state(path: str | os.PathLike[str], resources: list[dict[str, Any]],
                templates: list[dict[str, Any]] | None = None, **listing: Any) -> None:
    """Atomically write a ``resource_server`` state file (`listing`: its ``list_delay``
    and ``list_failures`` keys)."""
    path = os.fspath(path)
    tmp = f"{path}.writer.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"resources": resources, "templates": templates or [], **listing}, f, ensure_ascii=False)
    os.replace(tmp, path)


def listings(path: str | os.PathLike[str]) -> int:
    """How many ``resources/list`` pages the ``resource_server`` of state file `path` was asked for."""
    try:
        with open(f"{os.fspath(path)}.lists", encoding="utf-8") as f:
            return len(f.readlines())
    except FileNotFoundError:
        return 0


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _pump(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
    if stream is None:
        lines.put(None)
        return
    with contextlib.suppress(ValueError, OSError):  # closed by stop()
        for line in stream:
            lines.put(line)
    lines.put(None)
