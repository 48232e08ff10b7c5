"""The Computer role: hosts MCP servers (stdio, SSE, streamable HTTP) and serves their
tools, Desktop windows and Finder documents to an office, or locally without any Server."""

from .channels.finder_catalogue import FinderPage
from .computer import Computer
from .config.files import ComputerConfig, ConfigError, load_config, load_inputs
from .config.input_sources import InputMemory
from .config.inputs import InputError
from .config.oauth_store import FileTokenStore, KeyringTokenStore, OAuthTokenStore
from .config.redaction import REDACTED
from .mcp.failures import MCPServerError
from .mcp.manager import ServerManager
from .mcp.oauth import OAuthAuthorizationError
from .mcp.policy import ServerPolicy
from .mcp.status import (
    ComputerNotRunningError,
    ServerCapabilities,
    ServerEvent,
    ServersNotStartedError,
    ServerState,
    ServerStatus,
    ServerTool,
)
from .tools.calls import NoOneConfirms, PendingToolCall, allow_all
from .tools.history import ToolCallRecord

__all__ = [
    "Computer",
    "ComputerConfig",
    "ComputerNotRunningError",
    "ConfigError",
    "FileTokenStore",
    "FinderPage",
    "InputError",
    "InputMemory",
    "KeyringTokenStore",
    "MCPServerError",
    "NoOneConfirms",
    "OAuthAuthorizationError",
    "OAuthTokenStore",
    "PendingToolCall",
    "REDACTED",
    "ServerCapabilities",
    "ServerEvent",
    "ServerManager",
    "ServerPolicy",
    "ServerState",
    "ServerStatus",
    "ServersNotStartedError",
    "ServerTool",
    "ToolCallRecord",
    "allow_all",
    "load_config",
    "load_inputs",
]
