"""The wire contract as code: event names, error codes, models and the codec."""

from . import events
from .codec import converter, from_wire, to_wire
from .errors import (
    AuthError,
    BadRequestError,
    BlobError,
    CapabilityNotSupportedError,
    ErrorCode,
    FinderError,
    ForbiddenError,
    InternalError,
    InvalidURIError,
    MCPServerNotFoundError,
    NotFoundError,
    OfficeError,
    SMCPError,
    SMCPTimeoutError,
    SkillError,
    ToolAuthorizationError,
    ToolError,
    ToolTimeoutError,
    VersionMismatchError,
)
from .models import *  # noqa: F403
from .models import __all__ as _models_all

__all__ = [
    "events",
    "converter",
    "from_wire",
    "to_wire",
    "AuthError",
    "BadRequestError",
    "BlobError",
    "CapabilityNotSupportedError",
    "ErrorCode",
    "FinderError",
    "ForbiddenError",
    "InternalError",
    "InvalidURIError",
    "MCPServerNotFoundError",
    "NotFoundError",
    "OfficeError",
    "SMCPError",
    "SMCPTimeoutError",
    "SkillError",
    "ToolAuthorizationError",
    "ToolError",
    "ToolTimeoutError",
    "VersionMismatchError",
    *_models_all,
]
