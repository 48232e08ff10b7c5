"""The Computer role: hosts MCP servers (stdio, SSE, streamable HTTP) and serves their
tools, Desktop windows and Finder documents to an office, or locally without any Server."""

from ..protocol.redaction import REDACTED
from .channels.finder_catalogue import FinderPage
from .computer import Computer
from .config.files import ComputerConfig, ConfigError, load_config, load_inputs
from .config.input_sources import InputMemory
from .config.inputs import InputError
from .config.oauth_store import FileTokenStore, KeyringTokenStore, MemoryTokenStore, OAuthTokenStore
from .mcp.client_features import (
    ClientFeatures,
    ElicitationAnswer,
    FormElicitation,
    Root,
    SampledMessage,
    SamplingRequest,
    UrlElicitation,
)
from .mcp.failures import MCPServerError
from .mcp.oauth import IdentityAssertionRequest, OAuthAuthorizationError
from .mcp.policy import ServerPolicy
from .server_admin import MCPServers
from .options import BlobOptions, ChannelOptions, Inputs, SkillsOptions
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
    "BlobOptions",
    "ChannelOptions",
    "ClientFeatures",
    "Computer",
    "ComputerConfig",
    "ComputerNotRunningError",
    "ConfigError",
    "ElicitationAnswer",
    "FileTokenStore",
    "FinderPage",
    "FormElicitation",
    "IdentityAssertionRequest",
    "InputError",
    "Inputs",
    "InputMemory",
    "KeyringTokenStore",
    "MCPServerError",
    "MCPServers",
    "MemoryTokenStore",
    "NoOneConfirms",
    "OAuthAuthorizationError",
    "OAuthTokenStore",
    "PendingToolCall",
    "REDACTED",
    "Root",
    "SampledMessage",
    "SamplingRequest",
    "ServerCapabilities",
    "ServerEvent",
    "ServerPolicy",
    "ServerState",
    "ServerStatus",
    "ServersNotStartedError",
    "ServerTool",
    "SkillsOptions",
    "ToolCallRecord",
    "UrlElicitation",
    "allow_all",
    "load_config",
    "load_inputs",
]
