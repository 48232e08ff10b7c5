"""smcp_sync — a synchronous, threaded implementation of the A2C-SMCP protocol.

Every public call blocks and takes a timeout; no asyncio leaks into the API.
"""

import logging

from ._version import __version__
from .protocol import *  # noqa: F403
from .protocol import __all__ as _protocol_all

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__", *_protocol_all]
