"""attrs models of every A2C-SMCP wire structure (spec/data-structures.md + DESIGN §3)."""

from ._display import MarkdownText, SessionList, ToolList
from .blobs import (
    META_BLOB_HANDLE,
    META_SHA256,
    META_TOTAL_SIZE,
    GetBlobReq,
    GetBlobRet,
    PutBlobReq,
    PutBlobRet,
)
from .config import (
    CommandInput,
    GetComputerConfigReq,
    GetComputerConfigRet,
    IsoDuration,
    MCPServerConfig,
    MCPServerInput,
    PickStringInput,
    PickStringOption,
    PromptStringInput,
    SseServerConfig,
    SseServerParameters,
    StdioServerConfig,
    StdioServerParameters,
    StreamableHttpServerConfig,
    StreamableHttpServerParameters,
)
from .content import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    Resource,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from .desktop import Desktop, GetDeskTopReq, GetDeskTopRet
from .finder import (
    DEFAULT_FINDER_LIMIT,
    ELEMENT_CATEGORIES,
    MAX_FINDER_LIMIT,
    DPECatalogue,
    DPEDocument,
    DPEDocumentSummary,
    DPEElementDetail,
    DPEPage,
    DPEPageSummary,
    GetFinderReq,
    GetFinderRet,
)
from .resources import (
    A2CResource,
    CompleteReq,
    CompleteRet,
    Completion,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    GetResourcesReq,
    GetResourcesRet,
    PromptReference,
    ReadResourceReq,
    ReadResourceRet,
    ResourceAnnotations,
    ResourceTemplateReference,
    a2c_resource,
)
from .room import (
    AgentCallData,
    EnterOfficeNotification,
    EnterOfficeReq,
    LeaveOfficeNotification,
    LeaveOfficeReq,
    ListRoomReq,
    ListRoomRet,
    Role,
    SessionInfo,
    UpdateComputerConfigReq,
    UpdateMCPConfigNotification,
    UpdateToolListNotification,
)
from .skills import (
    DEFAULT_SKILL_FILE,
    A2CSkillRef,
    GetSkillReq,
    GetSkillRet,
    GetSkillsReq,
    GetSkillsRet,
)
from .tools import (
    A2C_TOOL_META,
    MCP_TOOL_ANNOTATION,
    CallToolResult,
    GetToolsReq,
    GetToolsRet,
    SMCPTool,
    ToolCallReq,
    ToolMeta,
)

__all__ = [name for name in dir() if not name.startswith("_") and name[0].isupper() or name.isupper()]
