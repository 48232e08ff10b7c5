"""smcp_sync — a synchronous, threaded implementation of the A2C-SMCP protocol.

Every public call blocks and takes a timeout; no asyncio leaks into the API.

The three roles are imported lazily (PEP 562): `import smcp_sync` stays cheap for code
that only needs the wire models, and pulls in python-socketio or the MCP SDK only when
`SMCPServer`, `Computer` or `Agent` is first used.
"""

import importlib
import logging
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .protocol import *  # noqa: F403
from .protocol import __all__ as _protocol_all
from .protocol.log_redaction import redact_log_records
from .protocol.models import *  # noqa: F403  (imported above too; type checkers see the models through this one)

logging.getLogger(__name__).addHandler(logging.NullHandler())
redact_log_records()  # no credential in any log record of ours or of the libraries we drive

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports
    from .agent import Agent as Agent
    from .computer import Computer as Computer
    from .connection import ForkedConnectionError as ForkedConnectionError
    from .connection import NotConnectedError as NotConnectedError
    from .connection import ReconnectPolicy as ReconnectPolicy
    from .server import APIKeyAuth as APIKeyAuth
    from .server import AuthProvider as AuthProvider
    from .server import SMCPServer as SMCPServer

_LAZY = {
    "SMCPServer": ".server",
    "APIKeyAuth": ".server",
    "AuthProvider": ".server",
    "Computer": ".computer",
    "Agent": ".agent",
    "NotConnectedError": ".connection",
    "ForkedConnectionError": ".connection",
    "ReconnectPolicy": ".connection",
}

__all__ = ["__version__", *_LAZY, *_protocol_all]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
