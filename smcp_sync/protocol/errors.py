"""Error codes of spec-0.3/error-handling.md (plus the Finder's 4201–4204) and the
exceptions that carry them.

One exception class per code family, with a subclass per code where callers plausibly
want to catch it alone. On the wire an error is the flat ErrorPayload of protocol 0.3/0.4,
``{"code", "message", <code-specific fields>, "details"?}`` (`SMCPError.to_wire`);
`SMCPError.from_wire` also reads the nested ``{"error": {...}}`` form of older peers
(0.1.x, the v0.2.0 draft), so a caller gets the same typed exception whoever produced it.
"""

from __future__ import annotations

import collections.abc
import enum
from typing import Any, ClassVar, Mapping


class ErrorCode(enum.IntEnum):
    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    FORBIDDEN = 403
    NOT_FOUND = 404
    TIMEOUT = 408
    INTERNAL_ERROR = 500
    TOOL_NOT_FOUND = 4001
    TOOL_DISABLED = 4002
    TOOL_EXECUTION_FAILED = 4003
    TOOL_TIMEOUT = 4004
    TOOL_REQUIRES_CONFIRMATION = 4005
    TOOL_AUTHORIZATION_REQUIRED = 4006
    TOOL_AUTHORIZATION_FAILED = 4007
    PROTOCOL_VERSION_MISMATCH = 4008
    MCP_SERVER_NOT_FOUND = 4014
    MCP_CAPABILITY_NOT_SUPPORTED = 4015
    SKILL_NAME_INVALID = 4016
    SKILL_RESOURCE_NOT_ACCESSIBLE = 4017
    BLOB_NOT_ACCESSIBLE = 4018
    BLOB_WRITE_FAILED = 4019
    ROOM_FULL = 4101
    ROOM_NOT_FOUND = 4102
    NOT_IN_ROOM = 4103
    CROSS_ROOM_ACCESS = 4104
    DOCUMENT_NOT_FOUND = 4201
    PAGE_OUT_OF_RANGE = 4202
    ELEMENT_NOT_FOUND = 4203
    INVALID_DPE_URI = 4204


_CLASS_BY_CODE: dict[int, type[SMCPError]] = {}

#: The code-specific fields the spec puts at the top level of an error payload, next to
#: `code` and `message` (4008: the versions; 4014 / 4015: the server and capability).
CODE_FIELDS = frozenset(
    {"server_version", "client_version", "min_supported", "max_supported", "mcp_server", "capability"}
)


class SMCPError(Exception):
    """A protocol failure: `code` (see `ErrorCode`), human `message`, structured `details`,
    and the code-specific top-level `fields` (`CODE_FIELDS`, e.g. 4014's `mcp_server`).

    `details` and `fields` must never carry secrets, host paths or stack traces: they go
    on the wire.
    """

    default_code: ClassVar[int] = ErrorCode.INTERNAL_ERROR
    #: The codes a subclass stands for (the first is its default): `for_code` picks it for them.
    codes: ClassVar[tuple[ErrorCode, ...]] = ()

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        details: Mapping[str, Any] | None = None,
        fields: Mapping[str, Any] | None = None,
    ):
        super().__init__(message)
        self.code = int(code if code is not None else self.default_code)
        self.message = message
        self.details = dict(details or {})
        unknown = set(fields or ()) - CODE_FIELDS
        if unknown:
            raise ValueError(f"not code-specific error fields: {sorted(unknown)}")
        self.fields = dict(fields or {})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        codes = cls.__dict__.get("codes", ())
        for code in codes:
            _CLASS_BY_CODE[int(code)] = cls
        if codes:
            cls.default_code = codes[0]

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        shown = f", fields={self.fields!r}" if self.fields else ""
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, details={self.details!r}{shown})"

    def __reduce__(self) -> tuple[Any, ...]:  # keep code/details/fields across pickling (multiprocessing, futures)
        return (_rebuild, (type(self), self.message, self.code, self.details, self.fields))

    def to_wire(self) -> dict[str, Any]:
        """The flat ErrorPayload: ``{"code", "message", <fields>, "details"?}``."""
        payload: dict[str, Any] = {"code": self.code, "message": self.message, **self.fields}
        if self.details:
            payload["details"] = self.details
        return payload

    @staticmethod
    def for_code(
        code: int, message: str, details: Mapping[str, Any] | None = None, fields: Mapping[str, Any] | None = None
    ) -> SMCPError:
        """The most specific exception class for `code` (unknown codes give a plain SMCPError)."""
        cls = _CLASS_BY_CODE.get(int(code), SMCPError)
        return cls(message, code=code, details=details, fields=fields)

    @staticmethod
    def from_wire(data: Any) -> SMCPError | None:
        """The error carried by an answer (flat, or nested under ``"error"`` as older peers
        send it), or None when `data` is not an error payload."""
        if not isinstance(data, _MAPPINGS) or "code" not in data and "error" not in data:
            return None  # most answers: every call's is looked at
        nested = data.get("error")
        body: Mapping[Any, Any] = nested if isinstance(nested, _MAPPINGS) else data
        code, message = body.get("code"), body.get("message")
        if isinstance(code, bool) or not isinstance(code, int) or not isinstance(message, str):
            return None
        if body is data and not _looks_flat(data):
            return None
        details = body.get("details")
        fields = {key: value for key, value in body.items() if key in CODE_FIELDS}
        return SMCPError.for_code(code, message, details if isinstance(details, Mapping) else None, fields)


def cut_short(text: str, limit: int = 200) -> str:
    """`text` cut to at most `limit` characters: refusals quote what they refuse, and a
    huge value must make neither a huge message nor huge details (both go back on the
    wire, and into logs)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: What an answer's error may be: `dict`, which JSON gives, checked first (`typing.Mapping`'s
#: check alone took ~2 µs, twice for every answer).
_MAPPINGS = (dict, collections.abc.Mapping)
#: The keys a flat error payload may have besides the code-specific fields.
_FLAT_KEYS = frozenset({"code", "message", "details", "req_id", "error_code", "data"}) | CODE_FIELDS


def _looks_flat(data: Mapping[str, Any]) -> bool:
    """A flat error has an error code (every spec code is >= 400) and only error keys: a
    result that merely has a `code` field, or a ``{"code": 0, "message": "ok"}`` success
    envelope, is not one."""
    return data["code"] >= 400 and set(data) <= _FLAT_KEYS


def _rebuild(
    cls: type[SMCPError], message: str, code: int, details: dict[str, Any], fields: dict[str, Any] | None = None
) -> SMCPError:
    return cls(message, code=code, details=details, fields=fields)


class BadRequestError(SMCPError):
    codes = (ErrorCode.BAD_REQUEST,)


class AuthError(SMCPError):
    codes = (ErrorCode.UNAUTHORIZED,)


class ForbiddenError(SMCPError):
    codes: ClassVar[tuple[ErrorCode, ...]] = (ErrorCode.FORBIDDEN,)


class OfficeError(ForbiddenError):
    """Office (room) rule violations: 4101–4104."""

    codes = (ErrorCode.ROOM_FULL, ErrorCode.ROOM_NOT_FOUND, ErrorCode.NOT_IN_ROOM, ErrorCode.CROSS_ROOM_ACCESS)


class NotFoundError(SMCPError):
    codes = (ErrorCode.NOT_FOUND,)


class SMCPTimeoutError(SMCPError, TimeoutError):
    """Also a builtin `TimeoutError`, so generic timeout handling catches it."""

    codes = (ErrorCode.TIMEOUT,)


class InternalError(SMCPError):
    codes = (ErrorCode.INTERNAL_ERROR,)


class VersionMismatchError(SMCPError):
    """4008: the Server does not speak the client's protocol version (HTTP handshake).
    The versions are the payload's top-level fields."""

    codes = (ErrorCode.PROTOCOL_VERSION_MISMATCH,)

    @property
    def server_version(self) -> str | None:
        return self.fields.get("server_version")

    @property
    def client_version(self) -> str | None:
        return self.fields.get("client_version")

    @property
    def min_supported(self) -> str | None:
        return self.fields.get("min_supported")

    @property
    def max_supported(self) -> str | None:
        return self.fields.get("max_supported")


class MCPServerNotFoundError(NotFoundError):
    """4014: the request names an MCP server (`mcp_server`, a bundle_id) the Computer does
    not have. A `NotFoundError`, as the 404 it replaces was."""

    codes = (ErrorCode.MCP_SERVER_NOT_FOUND,)

    @property
    def mcp_server(self) -> str | None:
        return self.fields.get("mcp_server")


class CapabilityNotSupportedError(SMCPError):
    """4015: the MCP server exists but did not declare the capability the request needs
    (`capability`, e.g. "resources" or "completions")."""

    codes = (ErrorCode.MCP_CAPABILITY_NOT_SUPPORTED,)

    @property
    def mcp_server(self) -> str | None:
        return self.fields.get("mcp_server")

    @property
    def capability(self) -> str | None:
        return self.fields.get("capability")


class SkillError(SMCPError):
    """Skill channel failures: 4016 invalid skill name, 4017 skill resource not accessible
    (`details.reason`)."""

    codes = (ErrorCode.SKILL_NAME_INVALID, ErrorCode.SKILL_RESOURCE_NOT_ACCESSIBLE)


class BlobError(SMCPError):
    """Blob transfer failures: 4018 not accessible (reading), 4019 write failed
    (`details.reason`)."""

    codes = (ErrorCode.BLOB_NOT_ACCESSIBLE, ErrorCode.BLOB_WRITE_FAILED)


class ToolError(SMCPError):
    """Tool-call failures 4001–4007."""

    codes: ClassVar[tuple[ErrorCode, ...]] = (
        ErrorCode.TOOL_NOT_FOUND,
        ErrorCode.TOOL_DISABLED,
        ErrorCode.TOOL_EXECUTION_FAILED,
        ErrorCode.TOOL_REQUIRES_CONFIRMATION,
    )


class ToolTimeoutError(ToolError, SMCPTimeoutError):
    codes = (ErrorCode.TOOL_TIMEOUT,)


class ToolAuthorizationError(ToolError):
    """4006 the tool's MCP server needs an authorization the Computer does not have,
    4007 the authorization it had failed (expired, revoked, insufficient scope)."""

    codes = (ErrorCode.TOOL_AUTHORIZATION_REQUIRED, ErrorCode.TOOL_AUTHORIZATION_FAILED)


class FinderError(SMCPError):
    """Finder document-system failures 4201–4203."""

    codes: ClassVar[tuple[ErrorCode, ...]] = (ErrorCode.DOCUMENT_NOT_FOUND, ErrorCode.PAGE_OUT_OF_RANGE, ErrorCode.ELEMENT_NOT_FOUND)


class InvalidURIError(FinderError):
    """A `dpe://` (4204) or `window://` URI that fails validation; the message says which rule."""

    codes = (ErrorCode.INVALID_DPE_URI,)
