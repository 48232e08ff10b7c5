"""Every test sees SIGINT as a user's terminal sends it, however pytest was started
(tests/conftest.py's pytest_configure): tox's parallel environments and a shell's
background jobs start it with SIGINT ignored."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IGNORING_SIGINT = "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.exit(pytest.main(sys.argv[1:]))"


def test_sigint_raises_keyboard_interrupt_here() -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_session_started_with_sigint_ignored_gets_it_back() -> None:
    chosen = f"{Path(__file__).relative_to(REPO)}::test_sigint_raises_keyboard_interrupt_here"
    run = subprocess.run(
        [sys.executable, "-c", IGNORING_SIGINT, "-q", "-p", "no:cacheprovider", chosen],
        cwd=REPO, capture_output=True, text=True, timeout=100,
    )  # fmt: skip
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr



def test_a_test_may_install_a_sigint_handler_of_its_own() -> None:
    """As python-socketio's client does when made in the main thread without
    handle_sigint=False (for the rest of the process); tests/conftest.py's
    `sigint_as_found` puts Python's back after the test (the next one checks)."""
    signal.signal(signal.SIGINT, lambda signum, frame: None)


def test_the_next_test_finds_sigint_as_python_handles_it() -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
