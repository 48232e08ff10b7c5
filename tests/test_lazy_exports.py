"""Every name `smcp_sync` exports resolves in a fresh interpreter, whatever was imported
before (the lazy names `NotConnectedError` and `ReconnectPolicy` named the `connection`
package, which has neither: they resolved only once something had imported its
`session` module)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.timeout(60)
def test_each_exported_name_resolves_in_a_fresh_interpreter() -> None:
    script = "import smcp_sync\nfor name in smcp_sync.__all__:\n    getattr(smcp_sync, name)\nprint('ok')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50)
    assert done.stdout == "ok\n", done.stderr
