"""Fixtures of the reliability suite: one exit stack per test that closes every part it
started (Servers, Computers, Agents), after which `no_leaks` checks the baseline; Servers
in child processes (`server_process`)."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import pytest

from .server_process import ServerProcess


@pytest.fixture
def stack(no_leaks: None) -> Iterator[contextlib.ExitStack]:
    """Enter each part with `stack.enter_context(...)`; all are closed, last first."""
    with contextlib.ExitStack() as parts:
        yield parts


@pytest.fixture
def thread_deaths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every exception that ended a thread during the test (the list should stay empty)."""
    deaths: list[str] = []

    def record(args: threading.ExceptHookArgs) -> None:
        deaths.append(f"{args.thread.name if args.thread else '?'}: {args.exc_type.__name__}: {args.exc_value}")

    monkeypatch.setattr(threading, "excepthook", record)
    return deaths


@pytest.fixture
def server_process(tmp_path, no_leaks) -> Iterator:
    """`server_process(**options)`: a started `ServerProcess`, stopped after the test."""
    started: list[ServerProcess] = []

    def start(**options: object) -> ServerProcess:
        started.append(ServerProcess(tmp_path / f"server-{len(started)}.log", **options))
        return started[-1]

    yield start
    for child in started:
        child.stop()
