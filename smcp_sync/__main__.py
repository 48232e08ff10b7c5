"""`python -m smcp_sync ...`: the `smcp-sync` command where its script is not on PATH
(a venv not activated, a user install on Windows)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
