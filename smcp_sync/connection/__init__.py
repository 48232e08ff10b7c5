"""The Socket.IO client side shared by the Agent and the Computer: one session class
(`session.Connection`) over python-socketio's client, and how a client presents its key.
"""

from .client_auth import key_auth, key_headers
from .session import Connection, ForkedConnectionError, NotConnectedError, ReconnectPolicy

__all__ = ["Connection", "ForkedConnectionError", "NotConnectedError", "ReconnectPolicy", "key_auth", "key_headers"]
