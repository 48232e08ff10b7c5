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
from .extensions import ExtensionNotSupportedError
from .models import *  # noqa: F403
from .models import __all__ as _models_all
from .versioning import PROTOCOL_VERSION

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
    "ExtensionNotSupportedError",
    "PROTOCOL_VERSION",
    *_models_all,
]
