"""The WSGI servers are the `server` extra: an Agent or Computer install goes without them.

`pip install smcp_sync` installs what Agents and Computers need; `SMCPServer` (werkzeug
for `start()`, gunicorn for `serve()`) needs ``pip install 'smcp_sync[server]'``. Without
it, importing the Server says so, naming the missing library.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

#: The libraries of the `server` extra (setup.cfg).
SERVER_EXTRA_LIBRARIES = ("werkzeug", "gunicorn")
INSTALL_HINT = "pip install 'smcp_sync[server]'"


@contextlib.contextmanager
def server_extra() -> Iterator[None]:
    """Around the imports of the extra's libraries: an ImportError of one of them is
    re-raised saying which extra installs it (other ImportErrors pass unchanged)."""
    try:
        yield
    except ImportError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in SERVER_EXTRA_LIBRARIES:
            raise
        raise ImportError(
            f"the SMCP Server needs the 'server' extra ({missing} is not installed): {INSTALL_HINT}", name=exc.name
        ) from exc
