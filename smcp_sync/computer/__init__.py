"""The Computer role: hosts MCP servers (stdio, SSE, streamable HTTP) and serves their
tools, Desktop windows and Finder documents to an office, or locally without any Server."""

from .computer import Computer
from .config_file import ComputerConfig, ConfigError, load_config, load_inputs
from .finder import FinderPage
from .history import ToolCallRecord
from .inputs import InputError
from .manager import MCPServerError, ServerManager
from .redaction import REDACTED
from .policy import ServerPolicy
from .status import (
    ComputerNotRunningError,
    ServerCapabilities,
    ServerEvent,
    ServersNotStartedError,
    ServerState,
    ServerStatus,
    ServerTool,
)
from .tool_calls import PendingToolCall

__all__ = [
    "Computer",
    "ComputerConfig",
    "ComputerNotRunningError",
    "ConfigError",
    "FinderPage",
    "InputError",
    "MCPServerError",
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
    "load_config",
    "load_inputs",
]
